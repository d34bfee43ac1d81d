"""Plan data: call nodes, references, sequential and tree plans, and their JSON forms.

Why one module of immutable pydantic models: the planners produce plans, the executor runs
them, the CLI saves and loads them, and the grammar layer needs their shape. One frozen type
per node (with a `kind` literal) describes a plan, checks its structure and yields its JSON
schema (`plan_json_schema()`), so nothing else has to agree on a second description.

Two JSON forms are read:
- the *typed* form that `to_json` writes: every node carries `kind`
  (`{"kind": "tree", "root": {"kind": "call", "function": "P.F", "args": {...}}}`);
- the *raw* form the grammar layer makes a model write, without `kind`: sequential
  `{"input": "...", "subtasks": [{"function": "P.F", "args": {...}, "output": "x"}]}` and tree
  `{"function": "P.F", "args": {"a": {"function": ..., "args": ...}}}`, where a string that is
  exactly a reference (`"$1"`, `"$input"`, `"$name"`, `"#E1"`) means that earlier result.
A literal string that looks like a reference, or a literal JSON object, is written as
`{"kind": "value", "value": ...}` in either form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from typing_extensions import TypeAliasType

from localagent.errors import PlanValidationError

if TYPE_CHECKING:
    from localagent.tools.registry import ToolRegistry

_REF_RE = re.compile(r"^(?:\$(?P<name>[A-Za-z_][A-Za-z0-9_]*|[1-9][0-9]*)|#E(?P<ev>[1-9][0-9]*))$")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

INPUT = "input"
"""The context variable that carries a sequential plan's input and each step's output."""


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Ref(_Node):
    """A reference to an earlier result: `$3` (step 3's output), `#E3` (the same, ReWOO
    style), `$input` (the piped value) or `$name` (a step's named output)."""

    kind: Literal["ref"] = "ref"
    name: str
    sigil: Literal["$", "#E"] = "$"

    @model_validator(mode="after")
    def _check_name(self) -> Ref:
        if Ref.parse(str(self)) is None:
            raise ValueError(f"{str(self)!r} is not a reference ($1, $name, $input or #E1)")
        return self

    @property
    def step(self) -> int | None:
        """The 1-based step number this reference names, or None for a variable."""
        return int(self.name) if self.name.isdigit() else None

    def __str__(self) -> str:
        return f"{self.sigil}{self.name}"

    @staticmethod
    def parse(text: str) -> Ref | None:
        """The reference `text` spells exactly, or None if it is an ordinary string."""
        match = _REF_RE.match(text)
        if match is None:
            return None
        if match["ev"] is not None:
            return Ref.model_construct(kind="ref", name=match["ev"], sigil="#E")
        return Ref.model_construct(kind="ref", name=match["name"], sigil="$")


class Value(_Node):
    """A literal that the plain JSON form cannot carry: an object, or a string that would
    otherwise read as a reference."""

    kind: Literal["value"] = "value"
    value: Any


def _arg_tag(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "literal"))
    if isinstance(value, _Node):
        return str(value.kind)  # type: ignore[attr-defined]
    if isinstance(value, (list, tuple)):
        return "list"
    return "literal"


Scalar = Union[StrictBool, StrictInt, StrictFloat, StrictStr, None]  # noqa: UP007

Arg = TypeAliasType(  # type: ignore[misc]
    "Arg",
    Annotated[
        Union[  # noqa: UP007 (a string forward reference cannot take part in `|`)
            Annotated["Call", Tag("call")],
            Annotated[Ref, Tag("ref")],
            Annotated[Value, Tag("value")],
            Annotated[tuple["Arg", ...], Tag("list")],  # type: ignore[misc]
            Annotated[Scalar, Tag("literal")],
        ],
        Discriminator(_arg_tag),
    ],
)
"""An argument: a JSON scalar, a nested call, a reference, a `Value`, or a list of these."""


class Call(_Node):
    """One function call; arguments may nest further calls, evaluated first."""

    kind: Literal["call"] = "call"
    function: str = Field(min_length=1)
    args: dict[str, Arg] = Field(default_factory=dict)

    def children(self) -> Iterator[tuple[str, Call]]:
        """(path relative to this call, nested call) for the direct sub-calls."""
        for name, arg in self.args.items():
            yield from _calls_in(arg, f"args.{name}")

    def refs(self) -> Iterator[tuple[str, Ref]]:
        """(relative path, reference) for every reference anywhere below this call."""
        for name, arg in self.args.items():
            yield from _refs_in(arg, f"args.{name}")

    def depth(self) -> int:
        """1 for a call whose arguments are all literals or references."""
        return 1 + max((child.depth() for _, child in self.children()), default=0)


class Step(_Node):
    """A sequential step: a call, and optionally a name under which its output is kept."""

    kind: Literal["step"] = "step"
    function: str = Field(min_length=1)
    args: dict[str, Arg] = Field(default_factory=dict)
    output: str | None = Field(default=None, pattern=_NAME_RE.pattern)

    @property
    def call(self) -> Call:
        return Call(function=self.function, args=self.args)


class SequentialPlan(_Node):
    """Semantic Kernel BasicPlanner's plan: steps in order, each output piped to the next
    step's `input` argument (unless the step sets `input` itself)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    kind: Literal["sequential"] = "sequential"
    input: str = ""
    steps: tuple[Step, ...] = Field(alias="subtasks")

    def to_json(self, *, indent: int | None = 2) -> str:
        return _to_json(self, indent)


class TreePlan(_Node):
    """A single nested call (`Diff(Total(C, F), Total(A, E))`), evaluated bottom-up."""

    kind: Literal["tree"] = "tree"
    root: Call

    def to_json(self, *, indent: int | None = 2) -> str:
        return _to_json(self, indent)


Plan = Annotated[SequentialPlan | TreePlan, Field(discriminator="kind")]
_PLAN = TypeAdapter(Plan)
_CALL = TypeAdapter(Call)


def _calls_in(arg: Any, path: str) -> Iterator[tuple[str, Call]]:
    if isinstance(arg, Call):
        yield path, arg
    elif isinstance(arg, tuple):
        for i, item in enumerate(arg):
            yield from _calls_in(item, f"{path}[{i}]")


def _refs_in(arg: Any, path: str) -> Iterator[tuple[str, Ref]]:
    if isinstance(arg, Ref):
        yield path, arg
    elif isinstance(arg, Call):
        for sub_path, ref in arg.refs():
            yield f"{path}.{sub_path}", ref
    elif isinstance(arg, tuple):
        for i, item in enumerate(arg):
            yield from _refs_in(item, f"{path}[{i}]")


# --- JSON ---------------------------------------------------------------------------------


def _to_json(plan: SequentialPlan | TreePlan, indent: int | None) -> str:
    return json.dumps(plan.model_dump(mode="json", by_alias=True), indent=indent)


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
    return {"function": call.function, "args": {k: _arg_to_raw(v) for k, v in call.args.items()}}


def _arg_to_raw(arg: Any) -> Any:
    if isinstance(arg, Call):
        return _call_to_raw(arg)
    if isinstance(arg, Ref):
        return str(arg)
    if isinstance(arg, Value):
        return arg.model_dump(mode="json")
    if isinstance(arg, tuple):
        return [_arg_to_raw(item) for item in arg]
    return arg


def plan_from_json(text: str) -> SequentialPlan | TreePlan:
    """Parse a plan in either JSON form; every structural problem in one PlanValidationError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanProblemsError([f"plan: not valid JSON ({exc})"]) from None
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
    allowed = {"function", "args", "output"} if step else {"function", "args"}
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
    if step and raw.get("output") is not None:
        output = raw["output"]
        if not isinstance(output, str) or not _NAME_RE.match(output) or output == INPUT:
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
    """Check a plan against a registry; raise one PlanValidationError listing every problem.

    See `localagent.plan_check` for the checks (kept apart to keep this module data-only).
    """
    from localagent.plan_check import check_plan

    problems = check_plan(plan, registry, max_depth=max_depth)
    if problems:
        raise _problems_error(problems)


Call.model_rebuild()
Step.model_rebuild()
SequentialPlan.model_rebuild()
TreePlan.model_rebuild()
