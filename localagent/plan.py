"""Plans: the node types (from `localagent.plan_nodes`), their JSON forms, and `validate`.

Two JSON forms are read:
- the *typed* form that `to_json` writes: every node carries `kind`
  (`{"kind": "tree", "root": {"kind": "call", "function": "P.F", "args": {...}}}`);
- the *raw* form the grammar layer makes a model write, without `kind`: sequential
  `{"input": "...", "subtasks": [{"function": "P.F", "args": {...}, "output": "x"}]}` and tree
  `{"function": "P.F", "args": {"a": {"function": ..., "args": ...}}}`, where a string that is
  exactly a reference (`"$1"`, `"$input"`, `"$name"`, `"#E1"`) means that earlier result.
A literal string that looks like a reference, or a literal JSON object, is written as
`{"kind": "value", "value": ...}` in either form.

Field access (structured results): a reference may name a field of the result, with keys
and list indexes, `"$1.pages"`, `"$2[0].price"`, `"$1.owner.city"` (`Ref.path`); a call
(nested, the tree's root, or a step) may carry `"field"` with the same path syntax without
the `$k`: `{"function": "P.F", "args": {...}, "field": "items[0].price"}` stands for that
field of the call's result (`Call.field`, `Step.field`; the typed form writes the path as a
list, `["items", 0, "price"]`, and accepts either). A call's field is what the call yields:
a nested call's field is the argument, the root's is the tree plan's answer, a step's is the
step's output (`$k`, the pipe and, on the last step, the plan's answer).

Structural problems (a wrong shape, an unknown field) raise `PlanProblemsError` when a plan
is read; `validate` checks a plan against a tool registry (`localagent.plan_check`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from localagent.errors import PlanValidationError
from localagent.plan_check import check_plan
from localagent.plan_nodes import (
    INPUT,
    NAME_RE,
    Arg,
    Call,
    Plan,
    Ref,
    SequentialPlan,
    Step,
    TreePlan,
    Value,
    parse_path,
    path_text,
)

if TYPE_CHECKING:
    from localagent.tools.registry import ToolRegistry

__all__ = [
    "INPUT",
    "Arg",
    "Call",
    "Plan",
    "PlanProblemsError",
    "Ref",
    "SequentialPlan",
    "Step",
    "TreePlan",
    "Value",
    "call_from_dict",
    "plan_from_dict",
    "plan_from_json",
    "plan_json_schema",
    "plan_to_dict",
    "plan_to_raw",
    "validate",
]

_PLAN = TypeAdapter(Plan)
_CALL = TypeAdapter(Call)


# --- JSON ---------------------------------------------------------------------------------


def plan_to_dict(plan: SequentialPlan | TreePlan) -> dict[str, Any]:
    """The typed form (every node with `kind`), as written by `to_json`."""
    return plan.model_dump(mode="json", by_alias=True)


def plan_to_raw(plan: SequentialPlan | TreePlan) -> dict[str, Any]:
    """The raw form the grammar layer's JSON uses (for prompts and few-shot examples)."""
    if isinstance(plan, TreePlan):
        return _call_to_raw(plan.root)
    steps = []
    for step in plan.steps:
        raw = _call_to_raw(step.call)
        if step.output is not None:
            raw["output"] = step.output
        steps.append(raw)
    return {"input": plan.input, "subtasks": steps}


def _call_to_raw(call: Call) -> dict[str, Any]:
    raw = {"function": call.function, "args": {k: _arg_to_raw(v) for k, v in call.args.items()}}
    if call.field:
        raw["field"] = path_text(call.field, lead=False)
    return raw


def _arg_to_raw(arg: Any) -> Any:
    if isinstance(arg, Call):
        return _call_to_raw(arg)
    if isinstance(arg, Ref):
        return str(arg)
    if isinstance(arg, Value):
        return arg.model_dump(mode="json")
    if isinstance(arg, tuple):
        return [_arg_to_raw(item) for item in arg]
    if isinstance(arg, str) and Ref.parse(arg) is not None:  # a literal, not a reference
        return {"kind": "value", "value": arg}
    return arg


def plan_from_json(text: str) -> SequentialPlan | TreePlan:
    """Parse a plan in either JSON form; every structural problem in one PlanValidationError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanProblemsError([f"plan: not valid JSON ({exc})"]) from None
    except ValueError:  # int() refuses more than sys.get_int_max_str_digits() digits
        raise PlanProblemsError([_TOO_LONG]) from None
    except RecursionError:
        raise PlanProblemsError([_TOO_DEEP]) from None
    return plan_from_dict(data)


def plan_from_dict(data: Any) -> SequentialPlan | TreePlan:
    """Accept the typed form (`kind` present) or the raw sequential / tree form."""
    try:
        return _plan_from_dict(data)
    except RecursionError:  # far beyond any depth limit; Python's own limit was hit
        raise PlanProblemsError([_TOO_DEEP]) from None


_TOO_DEEP = "plan: nested too deeply to read"
_TOO_LONG = "plan: a number has too many digits to read"


def _plan_from_dict(data: Any) -> SequentialPlan | TreePlan:
    problems: list[str] = []
    if not isinstance(data, dict):
        raise PlanProblemsError([f"plan: must be a JSON object, got {_type_name(data)}"])
    if "kind" in data:
        typed = data
    elif "subtasks" in data or "steps" in data:
        typed = _raw_sequential(data, problems)
    elif "function" in data:
        typed = {"kind": "tree", "root": _raw_call(data, "root", problems)}
    else:
        problems.append("plan: expected a sequential plan (\"subtasks\") or a call (\"function\")")
        typed = {}
    if problems:
        raise _problems_error(problems)
    try:
        return _PLAN.validate_python(typed)
    except ValidationError as exc:
        raise _problems_error(_pydantic_problems(exc)) from None


def call_from_dict(data: Any, path: str = "call") -> Call:
    """One call in either form (what ReAct / tool-calling planners hand the executor)."""
    problems: list[str] = []
    typed = data if isinstance(data, dict) and "kind" in data else _raw_call(data, path, problems)
    if problems:
        raise _problems_error(problems)
    try:
        return _CALL.validate_python(typed)
    except ValidationError as exc:
        raise _problems_error(_pydantic_problems(exc, prefix=path)) from None


def literal_call(function: str, args: dict[str, Any]) -> Call:
    """A call whose arguments are exactly the values given: what a ReAct or tool-calling
    model wrote for one action. Unlike `call_from_dict`, nothing in `args` is read as plan
    syntax: a string that spells a reference (`"$5"`, `"#E1"`) stays that string and a
    dict with a "function" key stays a dict, because a loop's call has no earlier steps to
    refer to and no nested calls (its arguments come from the goal and the results seen)."""
    return call_from_dict({"kind": "call", "function": function,
                           "args": {k: _literal(v) for k, v in args.items()}})


def _literal(value: Any) -> Any:
    """`value` in the typed form, as a literal (objects as `Value`, lists item by item)."""
    if isinstance(value, dict):
        return {"kind": "value", "value": value}
    if isinstance(value, (list, tuple)):
        return [_literal(v) for v in value]
    return value


def _raw_sequential(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    key = "subtasks" if "subtasks" in data else "steps"
    unknown = sorted(set(data) - {"input", key})
    if unknown:
        problems.append(f"plan: unknown field(s) {', '.join(unknown)}")
    raw_steps = data[key]
    if not isinstance(raw_steps, list):
        problems.append(f"subtasks: must be a list, got {_type_name(raw_steps)}")
        raw_steps = []
    steps = []
    for i, raw in enumerate(raw_steps):
        step = _raw_call(raw, f"subtasks[{i}]", problems, step=True)
        step["kind"] = "step"
        steps.append(step)
    plan_input = data.get("input", "")
    if not isinstance(plan_input, str):
        problems.append(f"input: must be a string, got {_type_name(plan_input)}")
    return {"kind": "sequential", "input": plan_input, "subtasks": steps}


def _raw_call(raw: Any, path: str, problems: list[str], *, step: bool = False) -> dict[str, Any]:
    if not isinstance(raw, dict):
        problems.append(f"{path}: a call must be an object, got {_type_name(raw)}")
        return {"kind": "call", "function": "?"}
    allowed = {"function", "args", "field", "output"} if step else {"function", "args", "field"}
    unknown = sorted(set(raw) - allowed - {"kind"})
    if unknown:
        problems.append(f"{path}: unknown field(s) {', '.join(unknown)}")
    function = raw.get("function")
    if not isinstance(function, str) or not function:
        problems.append(f"{path}.function: must be a non-empty string")
    args = raw.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        problems.append(f"{path}.args: must be an object, got {_type_name(args)}")
        args = {}
    out: dict[str, Any] = {
        "kind": "call",
        "function": function if isinstance(function, str) else "?",
        "args": {k: _raw_arg(v, f"{path}.args.{k}", problems) for k, v in args.items()},
    }
    if "field" in raw:
        text = raw["field"]
        field = parse_path(text) if isinstance(text, str) else None
        if field is None:
            problems.append(f"{path}.field: {text!r} is not a field path "
                            "(name, name.name, [0].name, name[0].name)")
        else:
            out["field"] = list(field)
    if step and raw.get("output") is not None:
        output = raw["output"]
        if not isinstance(output, str) or not NAME_RE.match(output) or output == INPUT:
            problems.append(f"{path}.output: {output!r} is not a usable name (a-z, 0-9, _)")
        out["output"] = output
    return out


def _raw_arg(raw: Any, path: str, problems: list[str]) -> Any:
    if isinstance(raw, str):
        ref = Ref.parse(raw)
        return ref.model_dump() if ref is not None else raw
    if isinstance(raw, list):
        return [_raw_arg(item, f"{path}[{i}]", problems) for i, item in enumerate(raw)]
    if isinstance(raw, dict):
        if raw.get("kind") in ("value", "ref", "call"):
            return raw if raw["kind"] != "call" else _raw_call(raw, path, problems)
        if "function" in raw:
            return _raw_call(raw, path, problems)
        return {"kind": "value", "value": raw}
    return raw


def _pydantic_problems(exc: ValidationError, prefix: str = "") -> list[str]:
    problems = []
    for err in exc.errors(include_url=False):
        if err["type"] in ("recursion_loop", "recursion_depth_exceeded"):
            return [_TOO_DEEP]
        parts = [prefix] if prefix else []
        for loc in err["loc"]:
            if isinstance(loc, int):
                parts[-1:] = [f"{parts[-1]}[{loc}]"] if parts else [f"[{loc}]"]
            elif loc not in ("call", "ref", "value", "list", "literal", "step", "tree",
                             "sequential"):
                parts.append(str(loc))
        problems.append(f"{'.'.join(parts) or 'plan'}: {err['msg']}")
    return list(dict.fromkeys(problems))


class PlanProblemsError(PlanValidationError):
    """A PlanValidationError that also keeps each problem (`path: what is wrong`) apart."""

    def __init__(self, problems: list[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        if len(problems) == 1:
            text = f"invalid plan: {problems[0]}"
        else:
            numbered = " ".join(f"({i}) {p}" for i, p in enumerate(problems, 1))
            text = f"invalid plan, {len(problems)} problems: {numbered}"
        super().__init__(text)


def _problems_error(problems: list[str]) -> PlanProblemsError:
    return PlanProblemsError(problems)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value),
                                                                          type(value).__name__)


def plan_json_schema() -> dict[str, Any]:
    """The JSON schema of the typed plan form (tool-agnostic; grammars narrow it per tool set)."""
    return _PLAN.json_schema(by_alias=True)


def validate(
    plan: SequentialPlan | TreePlan, registry: ToolRegistry, *, max_depth: int = 4
) -> None:
    """Check a plan against a registry; raise one `PlanProblemsError` listing every problem
    (`localagent.plan_check.check_plan` makes the list)."""
    problems = check_plan(plan, registry, max_depth=max_depth)
    if problems:
        raise _problems_error(problems)
