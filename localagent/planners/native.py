"""The model's own reply to a goal: the goal alone in its chat template with the tools
offered, greedy, no grammar and no planner prompt (what a user of llama.cpp would get).

Used by `native` (tools planner): under the grammar the model picks which functions to
call better, but it writes some values differently from its free reply ("3%" as 3 where
the free reply writes 0.03); `tool_calling.agreed` keeps the free reply's values where both
call the same functions.

Measured and not kept: the free reply as a refusal signal (it calls only functions nobody
offered). On BFCL's development set it refused none of 40 irrelevant questions that the
`decline` probe had not already refused, and 3 of 64 answerable ones
(`scripts/bench_decline.py --native`, docs/BENCHMARKS.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from localagent.errors import PlanValidationError
from localagent.grammars import ToolCallTurn, parse_tool_calls
from localagent.llm.base import LLM
from localagent.planners.base import GenerationLog
from localagent.tools.spec import ToolSpec


@dataclass(frozen=True)
class NativeReply:
    """The free reply: `turn` holds its calls when every one is valid among the offered
    tools (None for prose, an invalid call or a truncated reply)."""

    text: str
    turn: ToolCallTurn | None


def wrap_bare_calls(text: str) -> str:
    """Call objects `{"name": ..., "arguments": ...}` written without `<tool_call>` tags,
    bare or in a ```json fence, one or several, compact or pretty-printed over several
    lines: each wrapped in the tags. Anything else (prose, a partial object) is returned as
    it is.

    Qwen2.5-Coder writes its calls this way far more often than in the tags its chat
    template documents; read as an answer, the call would be lost.
    """
    body = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, flags=re.DOTALL)
    if fence:
        body = fence.group(1)
    objects = _json_objects(body)
    if not objects or not all(isinstance(o, dict) and set(o) == {"name", "arguments"}
                              for o in objects):
        return text
    return "\n".join(f"<tool_call>\n{json.dumps(o, ensure_ascii=False)}\n</tool_call>"
                     for o in objects)


def _json_objects(text: str) -> list[object] | None:
    """The JSON values `text` holds one after another (whitespace between), or None when
    it holds anything else."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return None
        out.append(value)
    return out


def native_reply(llm: LLM, goal: str, tools: Sequence[ToolSpec], schemas: list[dict], *,
                 max_tokens: int, max_calls: int, seed: int | None,
                 log: GenerationLog) -> NativeReply:
    """The model's free reply to `goal` with `schemas` offered in its chat template (which
    adds its own default system text), read as calls of `tools` where it holds any. A
    function named without its plugin counts where that is unambiguous: a tool made from
    a JSON schema is shown as `functions.f`, and the model calls it `f` (BFCL)."""
    completion = llm.chat([{"role": "user", "content": goal}], tools=schemas,
                          max_tokens=max_tokens, temperature=0.0, seed=seed, constraint=None)
    log.add(completion)
    text = wrap_bare_calls(completion.text)
    turn = None
    if not completion.truncated:
        try:
            parsed = parse_tool_calls(text, list(tools), max_calls=max_calls, bare_names=True)
            turn = parsed if parsed.calls else None
        except PlanValidationError:
            pass
    return NativeReply(text=completion.text, turn=turn)
