"""Turn generated text into plain data and validate it against the tools' schemas.

The grammar guarantees the form when it is in force; these parsers are what guarantees it
when it is not (unconstrained generation, a scripted model, a truncated output). A
truncated output raises `TruncatedOutputError` (the planner retries), anything else that
does not parse or validate raises `PlanValidationError` listing every problem: neither
ever reaches the executor.

Two rules judge a call's arguments here: a literal value against its parameter is JSON
Schema validation (`args_errors`); a nested call standing for an argument is the
grammar's own rule, `types.fits` (whether its return type promises a value of the
parameter), so an unconstrained output passes exactly where the grammar would have
admitted it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.errors import InvalidPlanError, PlanValidationError, TruncatedOutputError
from localagent.grammar.common import NO_PLAN_FUNCTION
from localagent.grammar.types import field_schema, fits
from localagent.llm.base import Completion
from localagent.plan_nodes import parse_path, path_text
from localagent.tools.spec import ToolSpec


@dataclass(frozen=True)
class ToolCall:
    function: str
    args: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class ParsedPlan:
    """`plan` is plain JSON data: the sequential dict or the root call of a tree; None
    when `declined` (the model wrote the refusal plan: no offered function fits)."""

    plan: Any = field(hash=False)
    reasoning: str | None = None
    declined: bool = False


@dataclass(frozen=True)
class ReactStep:
    thought: str
    action: ToolCall | None = None
    final_answer: str | None = None


@dataclass(frozen=True)
class ToolCallTurn:
    calls: tuple[ToolCall, ...] = ()
    answer: str | None = None


def ensure_complete(completion: Completion) -> str:
    """The completion's text, or `TruncatedOutputError` if it hit max_tokens."""
    if completion.truncated:
        raise TruncatedOutputError(
            f"output truncated at max_tokens ({completion.usage.completion_tokens} tokens): "
            f"{completion.text[-60:]!r}",
            hint="raise max_tokens or tighten the grammar bounds")
    return completion.text


# --- argument validation ------------------------------------------------------------------


def _by_name(tools: Sequence[ToolSpec]) -> dict[str, ToolSpec]:
    return {t.qualified_name: t for t in tools}


def _schema_errors(schema: dict[str, Any], value: Any, root: dict[str, Any]) -> list[str]:
    from jsonschema import Draft202012Validator

    full = {**schema}
    for defs in ("$defs", "definitions"):
        if defs in root and defs not in full:
            full[defs] = root[defs]
    return [f"{'/'.join(map(str, e.absolute_path)) or 'value'}: {e.message}"
            for e in Draft202012Validator(full).iter_errors(value)]


def args_errors(tool: ToolSpec, args: Any, schema: dict[str, Any] | None = None) -> list[str]:
    """Problems with `args` for `tool`: its literal values validated against `schema`
    (default: the tool's parameters) by JSON Schema; unknown keys always count, like the
    executor. A position holding a call or a reference is relaxed to `{}` by the caller:
    whether a result fits is `types.fits` (`parse_tree`) or the plan check's question."""
    name = tool.qualified_name
    schema = tool.parameters if schema is None else schema
    if not isinstance(args, dict):
        return [f"{name}: args must be an object"]
    props = tool.parameters.get("properties", {})
    problems = [f"{name}: unknown argument {k!r}" for k in args if k not in props]
    problems += [f"{name}: {p}" for p in _schema_errors(schema, args, tool.parameters)
                 if "Additional properties" not in p]
    return problems


def _call_of(node: Any, tools: dict[str, ToolSpec], where: str,
             problems: list[str]) -> tuple[ToolSpec, dict[str, Any]] | None:
    if not isinstance(node, dict) or not {"function", "args"} <= set(node) <= _CALL_KEYS:
        problems.append(f"{where}: expected {{\"function\": ..., \"args\": {{...}}}}")
        return None
    tool = tools.get(node["function"]) if isinstance(node["function"], str) else None
    if tool is None:
        problems.append(f"{where}: unknown function {node['function']!r}")
        return None
    if not isinstance(node["args"], dict):
        problems.append(f"{where}: args of {tool.qualified_name} must be an object")
        return None
    if "field" in node and call_field(node, tool) is None:
        problems.append(f"{where}.field: {field_problem(node['field'], tool)}")
        return None
    return tool, node["args"]


_CALL_KEYS = {"function", "args", "field"}


def call_field(node: dict[str, Any], tool: ToolSpec) -> tuple[str | int, ...] | None:
    """The field path a call node carries (`"field": "items[0].price"`; () when none), or
    None when it is not a path or names a part the tool's return schema does not declare."""
    text = node.get("field", "")
    path = parse_path(text) if isinstance(text, str) else None
    if path is None or field_schema(tool.returns, path)[1] is not None:
        return None
    return path


def field_problem(text: Any, tool: ToolSpec) -> str:
    """Why `text` is not a field of `tool`'s result (for `call_field`'s None)."""
    path = parse_path(text) if isinstance(text, str) else None
    if path is None:
        return f"{text!r} is not a field path (name, name.name, [0].name)"
    return f"{tool.qualified_name}'s result: {field_schema(tool.returns, path)[1]}"


# --- JSON plans ---------------------------------------------------------------------------


def _json_payload(text: str) -> Any:
    """The one JSON object in `text`; a ```json fence and surrounding whitespace are allowed."""
    body = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, flags=re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        value, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        raise PlanValidationError(f"output is not JSON: {exc.msg} at {exc.pos}") from exc
    except (ValueError, RecursionError) as exc:
        raise PlanValidationError(f"output is not usable JSON: {json_limit(exc)}") from None
    if body[end:].strip():
        raise PlanValidationError(f"extra text after the JSON: {body[end:end + 40]!r}")
    return value


def json_limit(exc: ValueError | RecursionError) -> str:
    """What a limit of Python's JSON reader refused, beyond syntax: ValueError for an
    integer of more than `sys.get_int_max_str_digits()` digits, RecursionError for arrays
    or objects nested past the recursion limit."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "a number has too many digits"


def json_object_lost(text: str) -> bool:
    """True once `text` can no longer be what `_json_payload` accepts as a plan: one JSON
    object, fenced or not, and nothing else.

    Unconstrained generation can stop as soon as this holds: an output with prose before
    or after the plan is rejected anyway, however long it runs on (small models often
    go on until max_tokens). Only the start and the end are judged: a malformed object
    runs to its end and is rejected by the parser.
    """
    body = text.lstrip()
    fenced = body.startswith("`")
    if fenced:
        if not (body.startswith("```") or "```".startswith(body)):
            return True
        rest = body[3:]
        if len(rest) < 4 and "json".startswith(rest):
            return False
        body = rest.removeprefix("json").lstrip()
    if not body:
        return False
    if body[0] != "{":
        return True
    try:
        _, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError:
        return False  # not finished yet (or malformed inside: judged at the end)
    except (ValueError, RecursionError):
        return True  # past a limit of the JSON reader: the parser refuses it in any case
    tail = body[end:].strip()
    if fenced:
        return not "```".startswith(tail[:3]) or len(tail) > 3
    return bool(tail)


def _split_reasoning(data: Any, key: str | None) -> tuple[Any, str | None]:
    if isinstance(data, dict) and "reasoning" in data and isinstance(data["reasoning"], str):
        rest = {k: v for k, v in data.items() if k != "reasoning"}
        if key is not None:
            return (rest.get(key) if set(rest) == {key} else rest), data["reasoning"]
        return rest, data["reasoning"]
    return data, None


def is_no_plan(node: Any) -> bool:
    """Whether `node` is the refusal call `{"function": "none", "args": {}}`."""
    return node == {"function": NO_PLAN_FUNCTION, "args": {}}


def parse_sequential(text: str, tools: Sequence[ToolSpec], *,
                     max_steps: int | None = None, refs: bool = False,
                     decline: bool = False) -> ParsedPlan:
    """`{"input": str, "subtasks": [{"function", "args"}...]}` (optionally with "reasoning").

    `refs`: an argument may be a step reference `"$k"` in place of a value of its type;
    a reference to step k >= the current one is rejected here, whatever the grammar
    allowed. Whether step k's result fits is not judged here: the plan check judges it
    (`types.may_fit`) before the plan runs, and with `typed` the grammar already did.
    `decline`: subtasks that are just the refusal call (`is_no_plan`) parse as declined.
    """
    plan, reasoning = _split_reasoning(_json_payload(text), None)
    if not isinstance(plan, dict) or set(plan) != {"input", "subtasks"}:
        raise PlanValidationError('plan must have exactly "input" and "subtasks"')
    if not isinstance(plan["input"], str) or not isinstance(plan["subtasks"], list):
        raise PlanValidationError('"input" must be a string and "subtasks" a list')
    if decline and len(plan["subtasks"]) == 1 and is_no_plan(plan["subtasks"][0]):
        return ParsedPlan(plan=None, reasoning=reasoning, declined=True)
    if not plan["subtasks"] or (max_steps is not None and len(plan["subtasks"]) > max_steps):
        raise PlanValidationError(f"plan has {len(plan['subtasks'])} subtasks")
    by_name, problems = _by_name(tools), []
    for i, node in enumerate(plan["subtasks"]):
        found = _call_of(node, by_name, f"subtasks[{i}]", problems)
        if found and refs:
            problems += _step_ref_errors(*found, i, f"subtasks[{i}]")
        elif found:
            problems += args_errors(*found)
    if problems:
        raise InvalidPlanError("invalid plan: " + "; ".join(problems))
    return ParsedPlan(plan=plan, reasoning=reasoning)


_STEP_REF = re.compile(r"^\$([1-9][0-9]*)((?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*)$")
"""A step reference, with a field path (`$2[0].price`): which step's result fits the
argument, and whether the path exists in it, is the plan check's question."""


def _step_ref_errors(tool: ToolSpec, args: dict[str, Any], index: int, where: str) -> list[str]:
    """Schema problems of `args` with step references relaxed; forward references."""
    problems, relaxed = [], dict(tool.parameters.get("properties", {}))

    def check(value: Any, path: str) -> bool:
        match = _STEP_REF.fullmatch(value) if isinstance(value, str) else None
        # more digits than `index` is later (and int() refuses thousands of digits)
        if match and (len(match[1]) > len(str(index)) or int(match[1]) > index):
            problems.append(f"{where}.{path}: reference {value} is not available yet "
                            f"(step {match[1]} runs later)")
        return match is not None

    for key, value in args.items():
        items = value if isinstance(value, list) else [value]
        found = [check(v, f"args.{key}" if v is value else f"args.{key}[{n}]")
                 for n, v in enumerate(items)]
        if any(found):
            relaxed[key] = {}
    schema = {**tool.parameters, "properties": relaxed}
    return problems + args_errors(tool, args, schema)


def parse_tree(text: str, tools: Sequence[ToolSpec], *, depth: int = 4,
               decline: bool = False) -> ParsedPlan:
    """A call tree `{"function", "args"}` whose args may be calls whose return type fits
    (`types.fits`, as in the grammar), nested at most `depth` levels; literal arguments
    validated by JSON Schema. `decline`: the refusal call (`is_no_plan`) parses as declined."""
    plan, reasoning = _split_reasoning(_json_payload(text), "plan")
    if decline and is_no_plan(plan):
        return ParsedPlan(plan=None, reasoning=reasoning, declined=True)
    problems: list[str] = []
    _check_tree(plan, _by_name(tools), 1, depth, "plan", problems)
    if problems:
        raise InvalidPlanError("invalid plan: " + "; ".join(problems))
    return ParsedPlan(plan=plan, reasoning=reasoning)


def is_call(value: Any) -> bool:
    return isinstance(value, dict) and {"function", "args"} <= set(value) <= _CALL_KEYS \
        and isinstance(value["function"], str)


def _check_tree(node: Any, tools: dict[str, ToolSpec], level: int, depth: int, where: str,
                problems: list[str]) -> None:
    if level > depth:
        problems.append(f"{where}: nested deeper than {depth}")
        return
    found = _call_of(node, tools, where, problems)
    if not found:
        return
    tool, args = found
    props = tool.parameters.get("properties", {})
    nested = {k for k, v in args.items()
              if is_call(v) or (isinstance(v, list) and any(is_call(x) for x in v))}
    for key in nested:
        _check_nested(args[key], props.get(key, {}), tool.parameters, tools, level, depth,
                      f"{where}.{key}", problems)
    # Nested positions were checked above; the rest of the object against the schema.
    relaxed = {**tool.parameters,
               "properties": {k: ({} if k in nested else s) for k, s in props.items()}}
    problems += args_errors(tool, args, relaxed)


def _check_nested(value: Any, schema: dict[str, Any], root: dict[str, Any],
                  tools: dict[str, ToolSpec], level: int, depth: int, where: str,
                  problems: list[str]) -> None:
    """A call (or a list holding calls) standing where `schema` is expected."""
    if is_call(value):
        callee = tools.get(value["function"])
        path = call_field(value, callee) if callee is not None else None
        if path is not None and callee is not None and not fits(
                schema, field_schema(callee.returns, path)[0], root):
            what = "returns" if not path else f"returns at {path_text(path, lead=False)}"
            problems.append(f"{where}: {callee.qualified_name} {what} a type that does not fit")
        _check_tree(value, tools, level + 1, depth, where, problems)
        return
    items = schema.get("items", {}) if isinstance(schema, dict) else {}
    for i, item in enumerate(value):
        if is_call(item):
            _check_nested(item, items, root, tools, level, depth, f"{where}[{i}]", problems)
        else:
            problems += [f"{where}[{i}]: {e}" for e in _schema_errors(items, item, root)]
