"""The raw baseline: the same GGUF prompted directly, as a user would without localagent.

One turn: the case's messages rendered by the model's own chat template with the tools'
OpenAI schemas, greedy, no grammar; the calls are read from its `<tool_call>` blocks
(Hermes/Qwen format: `{"name": ..., "arguments": {...}}` inside the tags). Qwen2.5-Coder
mostly writes the same objects bare or in a ```json fence instead; those count as calls
too (`wrap_bare_calls`, as the tool-calling planner reads them), so the baseline is not
beaten on a formality. A block that is not JSON is dropped, as a standard parser would.
Text outside the blocks is the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from localagent.llm.base import LLM, Message, Usage
from localagent.planners.native import wrap_bare_calls

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


@dataclass(frozen=True)
class RawTurn:
    calls: tuple[tuple[str, dict[str, Any]], ...]  # (name, arguments) as the model wrote them
    text: str
    usage: Usage


def raw_turn(llm: LLM, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *,
             max_tokens: int = 400) -> RawTurn:
    completion = llm.chat(list(messages), tools=list(tools), max_tokens=max_tokens,
                          temperature=0.0, seed=0, constraint=None)
    text = wrap_bare_calls(completion.text)
    return RawTurn(calls=tuple(read_tool_calls(text)), text=_BLOCK.sub("", text).strip(),
                   usage=completion.usage)


def read_tool_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The well-formed `<tool_call>` blocks of `text`, in order."""
    calls = []
    for body in _BLOCK.findall(text):
        try:
            obj = json.loads(body)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                continue
        if isinstance(args, dict):
            calls.append((obj["name"], args))
    return calls
