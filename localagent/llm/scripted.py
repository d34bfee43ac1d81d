"""A scripted LLM for fast, deterministic tests of code above the backend.

It replays queued outputs in order (simonw/llm's `MockModel.enqueue`) or calls a function
with the prompt (pydantic-ai's `FunctionModel`), and records every request so a test can
check what the model was shown and which constraint was in force.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from localagent.constraint import Constraint
from localagent.llm.base import LLM, Completion, GiveUp, Message, ModelInfo, Usage, common_prefix


@dataclass(frozen=True)
class ScriptedRequest:
    prompt: str
    max_tokens: int
    stop: tuple[str, ...]
    temperature: float | None
    constraint: Constraint | None


Responder = Callable[[ScriptedRequest], str]


class ScriptedLLM(LLM):
    """Replays `outputs` (strings) one per call, or answers with `responder(request)`."""

    def __init__(
        self,
        outputs: Iterable[str] = (),
        *,
        responder: Responder | None = None,
        name: str = "scripted",
        chat_format: str | None = "chatml",
        n_ctx: int = 8192,
    ) -> None:
        self.info = ModelInfo(name=name, path=None, chat_format=chat_format, n_ctx=n_ctx,
                              supports_tools=chat_format is not None)
        self._queue: deque[str] = deque(outputs)
        self._responder = responder
        self.requests: list[ScriptedRequest] = []
        self._last_tokens: list[str] = []

    def enqueue(self, *outputs: str) -> None:
        self._queue.extend(outputs)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float | None = None,
        seed: int | None = None,
        constraint: Constraint | None = None,
        give_up: GiveUp | None = None,
    ) -> Completion:
        request = ScriptedRequest(prompt, max_tokens, tuple(stop), temperature, constraint)
        self.requests.append(request)
        if self._queue:
            text = self._queue.popleft()
        elif self._responder is not None:
            text = self._responder(request)
        else:
            raise AssertionError(f"ScriptedLLM has no output left for prompt: {prompt[-200:]!r}")
        for s in stop:
            if s and s in text:
                text = text[: text.index(s)]
        if give_up is not None:  # the shortest prefix that gives up, as a real model stops
            text = next((text[:n] for n in range(1, len(text)) if give_up(text[:n])), text)
        tokens = prompt.split()
        reused = common_prefix(self._last_tokens, tokens)
        self._last_tokens = tokens
        words = text.split()
        finish = "length" if len(words) > max_tokens else "stop"
        usage = Usage(calls=1, prompt_tokens=len(tokens), prompt_tokens_reused=reused,
                      completion_tokens=min(len(words), max_tokens))
        return Completion(text=text, usage=usage, finish_reason=finish, prompt=prompt)

    def format_chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """A ChatML-like rendering, good enough for tests to inspect."""
        parts = []
        if tools:
            parts.append("<|im_start|>system\n<tools>\n"
                         + "\n".join(json.dumps(t) for t in tools) + "\n</tools><|im_end|>")
        for m in messages:
            content = m.get("content") or ""
            if m.get("tool_calls"):
                content += "".join(f"\n<tool_call>\n{json.dumps(c)}\n</tool_call>"
                                   for c in m["tool_calls"])
            parts.append(f"<|im_start|>{m['role']}\n{content}<|im_end|>")
        if add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "\n".join(parts)

    def count_tokens(self, text: str) -> int:
        return len(text.split())
