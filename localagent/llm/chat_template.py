"""Render chat messages to a prompt with the GGUF's own chat template.

Why render ourselves instead of calling `Llama.create_chat_completion`: chat must go
through the same `complete()` path as text, so that constraints and the KV-cache prefix
reuse apply to it too. We use llama-cpp-python's `Jinja2ChatFormatter` (the same sandboxed
Jinja environment, `tojson` and `{% generation %}` handling it uses for the template stored
under the GGUF metadata key "tokenizer.chat_template"), and pass OpenAI-style `tools`
into the template. Base models without a template get a plain-text layout.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from localagent.llm.base import Message

TEMPLATE_KEY = "tokenizer.chat_template"


class ChatTemplate:
    """A model's chat template (or the plain fallback), rendered with jinja2."""

    def __init__(self, template: str | None, *, bos_token: str, eos_token: str) -> None:
        self.source = template
        self._bos = bos_token
        self._eos = eos_token
        self._formatters: dict[bool, Any] = {}

    @property
    def supports_tools(self) -> bool:
        return bool(self.source) and "tools" in (self.source or "")

    def render(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        if not self.source:
            return plain_chat(messages, tools=tools, add_generation_prompt=add_generation_prompt)
        formatter = self._formatter(add_generation_prompt)
        response = formatter(messages=list(messages), tools=list(tools) if tools else None)
        return str(response.prompt)

    def _formatter(self, add_generation_prompt: bool) -> Any:
        if add_generation_prompt not in self._formatters:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            self._formatters[add_generation_prompt] = Jinja2ChatFormatter(
                template=self.source or "",
                eos_token=self._eos,
                bos_token=self._bos,
                add_generation_prompt=add_generation_prompt,
            )
        return self._formatters[add_generation_prompt]


def plain_chat(
    messages: Sequence[Message],
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """A role-prefixed transcript for base models, which have no chat template."""
    lines: list[str] = []
    if tools:
        lines.append("Tools:")
        lines.extend(json.dumps(t, ensure_ascii=False) for t in tools)
        lines.append("")
    for m in messages:
        content = str(m.get("content") or "")
        for call in m.get("tool_calls") or []:
            content += "\n" + json.dumps(call, ensure_ascii=False)
        lines.append(f"{str(m['role']).capitalize()}: {content}")
    if add_generation_prompt:
        lines.append("Assistant:")
    return "\n".join(lines)
