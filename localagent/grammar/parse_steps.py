"""Parse a ReAct step or a tool-call turn into plain data, validating every call.

Strict on purpose: what the grammar allows, plus surrounding whitespace. The same
parsers judge constrained and unconstrained outputs, so the validity rates compare.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from localagent.errors import InvalidPlanError, PlanValidationError
from localagent.grammar.common import HERMES, CallFormat
from localagent.grammar.parse import (
    ReactStep,
    ToolCall,
    ToolCallTurn,
    args_errors,
    json_limit,
)
from localagent.tools.spec import ToolSpec

_REACT = re.compile(
    r"Thought:[ \t]*(?P<thought>[^\n]*)\n"
    r"(?:Action:[ \t]*(?P<action>[^\n]+?)[ \t]*\nAction Input:[ \t]*(?P<input>.*)"
    r"|Final Answer:[ \t]*(?P<final>.*))",
    flags=re.DOTALL,
)


def _validated(name: str, args: object, tools: Sequence[ToolSpec], where: str,
               bare_names: bool = False) -> ToolCall:
    """The call of `name` with `args`, checked against `tools`. With `bare_names`, a name
    that is no qualified name but the function name of exactly one tool calls that tool
    (free text: a schema tool `functions.f` is called `f`, as the schema named it)."""
    tool = next((t for t in tools if t.qualified_name == name), None)
    if tool is None and bare_names:
        named = [t for t in tools if t.name == name]
        tool = named[0] if len(named) == 1 else None
    if tool is None:
        raise InvalidPlanError(f"{where}: unknown function {name!r}")
    name = tool.qualified_name
    problems = args_errors(tool, args)
    if problems:
        raise InvalidPlanError(f"{where}: " + "; ".join(problems))
    assert isinstance(args, dict)
    return ToolCall(function=name, args=args)


def _one_json(text: str, where: str) -> object:
    try:
        value, end = json.JSONDecoder().raw_decode(text.strip())
    except json.JSONDecodeError as exc:
        raise PlanValidationError(f"{where}: not JSON ({exc.msg})") from exc
    except (ValueError, RecursionError) as exc:
        raise PlanValidationError(f"{where}: not usable JSON ({json_limit(exc)})") from None
    if text.strip()[end:].strip():
        raise PlanValidationError(f"{where}: extra text after the JSON")
    return value


def parse_react(text: str, tools: Sequence[ToolSpec]) -> ReactStep:
    """`Thought: ...` + (`Action: P.F` + `Action Input: {json}` | `Final Answer: ...`)."""
    m = _REACT.fullmatch(text.strip())
    if not m:
        raise PlanValidationError(f"not a ReAct step: {text.strip()[:80]!r}")
    thought = m.group("thought").strip()
    if m.group("final") is not None:
        final = m.group("final").strip()
        if not final:
            raise PlanValidationError("empty final answer")
        return ReactStep(thought=thought, final_answer=final)
    args = _one_json(m.group("input"), "Action Input")
    call = _validated(m.group("action").strip(), args, tools, "Action")
    return ReactStep(thought=thought, action=call)


def parse_tool_calls(text: str, tools: Sequence[ToolSpec], *,
                     call_format: CallFormat = HERMES, max_calls: int | None = None,
                     allow_answer: bool = True, bare_names: bool = False) -> ToolCallTurn:
    """Calls written in `call_format` (one or more), or a plain answer. `bare_names`: a
    function may be named without its plugin where that is unambiguous (`_validated`;
    for free text, which no grammar held to the qualified names)."""
    body = text.strip()
    opener = call_format.open.strip()
    if not body.startswith(opener):
        if not allow_answer or not body:
            raise PlanValidationError("expected a tool call")
        if opener in body:
            raise PlanValidationError("a tool call after answer text")
        return ToolCallTurn(answer=body)
    block = re.compile(re.escape(opener) + r"\s*(.*?)\s*" + re.escape(call_format.close.strip()),
                       flags=re.DOTALL)
    calls, pos = [], 0
    for m in block.finditer(body):
        if body[pos:m.start()].strip():
            raise PlanValidationError("text between tool calls")
        data = _one_json(m.group(1), f"call {len(calls) + 1}")
        if not isinstance(data, dict) or set(data) != {call_format.name_key,
                                                       call_format.args_key}:
            raise PlanValidationError(f"call {len(calls) + 1}: expected "
                                      f"{call_format.name_key!r} and {call_format.args_key!r}")
        name = data[call_format.name_key]
        calls.append(_validated(str(name), data[call_format.args_key], tools,
                                f"call {len(calls) + 1}", bare_names))
        pos = m.end()
    if not calls or body[pos:].strip():
        raise PlanValidationError("unterminated or malformed tool call")
    if max_calls is not None and len(calls) > max_calls:
        raise PlanValidationError(f"{len(calls)} calls, at most {max_calls} allowed")
    return ToolCallTurn(calls=tuple(calls))
