"""Property tests of the executor's reference resolution (`localagent.executor`) with random
plans over a small real registry of pure functions (no mocks: real `@tool` functions, real
registry, real executor).

The properties:
- a well-typed random plan (sequential with `$k`, `#Ek`, `$input`, `$name` and the `input`
  pipe; or a tree of nested calls) runs to exactly the value a plain Python evaluation of
  the same plan gives, step by step;
- any random or hostile plan either fails validation with `PlanValidationError`, or runs
  to an `ExecutionResult` whose failure, if any, is data (`RunError`); the same without
  validating first;
- a single call with hostile literal arguments (`run_call`) always comes back as data.
Examples per test: the hypothesis profile (tests/conftest.py, "ci").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from localagent.errors import PlanValidationError
from localagent.executor import ExecutionPolicy, ExecutionResult, Executor, RunError
from localagent.plan import SequentialPlan, TreePlan, literal_call, plan_from_dict
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry
from localagent.trace import CallFinished


class Pure:
    """Pure functions of numbers, texts and lists (one sync, one that always fails)."""

    @tool
    async def add(self, a: float, b: float) -> float:
        """a + b."""
        return a + b

    @tool
    async def neg(self, x: float) -> float:
        """-x."""
        return -x

    @tool
    async def concat(self, a: str, b: str) -> str:
        """a followed by b."""
        return a + b

    @tool
    async def length(self, input: str) -> int:
        """The number of characters of the input."""
        return len(input)

    @tool
    async def total(self, values: list[float]) -> float:
        """The sum of the values."""
        return sum(values)

    @tool
    def echo(self, input: str) -> str:
        """The input unchanged (a blocking function: runs in a worker thread)."""
        return input

    @tool
    async def record(self, n: float) -> dict[str, Any]:
        """A nested record built from n (objects inside lists inside objects)."""
        return {"n": n, "items": [n, n + 1, {"deep": [n * 2]}], "name": {"first": "x"}}

    @tool
    async def keep(self, value: Any) -> Any:
        """The value unchanged, whatever it is."""
        return value

    @tool
    async def fail(self, input: str) -> str:
        """Always raises."""
        raise ValueError(f"refused {input[:10]!r}")


REGISTRY = ToolRegistry()
REGISTRY.add_plugin(Pure())
NAMES = REGISTRY.names()
POLICY = ExecutionPolicy(call_timeout=30, max_calls=200, max_seconds=120, max_workers=4)

# --- well-typed plans with their values -----------------------------------------------------

NUM, TEXT = "number", "text"


@dataclass(frozen=True)
class Typed:
    """A raw plan argument and the value it evaluates to."""

    raw: Any
    value: Any
    kind: str


_SMALL = st.integers(min_value=-1000, max_value=1000)
_WORDS = st.text(max_size=6)


def _leaf(kind: str) -> st.SearchStrategy[Typed]:
    if kind == NUM:
        return _SMALL.map(lambda n: Typed(n, n, NUM))
    # a literal string that spells a reference must be written as a Value
    return _WORDS.map(lambda s: Typed({"kind": "value", "value": s} if s.startswith(("$", "#"))
                                      else s, s, TEXT))


def _call(function: str, **args: Typed) -> dict[str, Any]:
    return {"function": f"Pure.{function}", "args": {k: a.raw for k, a in args.items()}}


@st.composite
def _tree(draw: st.DrawFn, kind: str, depth: int) -> Typed:
    """A nested call (or a literal) of `kind`, at most `depth` calls deep."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(_leaf(kind))
    sub = depth - 1
    if kind == TEXT:
        a, b = draw(_tree(TEXT, sub)), draw(_tree(TEXT, sub))
        if draw(st.booleans()):
            return Typed(_call("concat", a=a, b=b), a.value + b.value, TEXT)
        return Typed(_call("echo", input=a), a.value, TEXT)
    choice = draw(st.sampled_from(["add", "neg", "length", "total"]))
    if choice == "add":
        a, b = draw(_tree(NUM, sub)), draw(_tree(NUM, sub))
        return Typed(_call("add", a=a, b=b), a.value + b.value, NUM)
    if choice == "neg":
        x = draw(_tree(NUM, sub))
        return Typed(_call("neg", x=x), -x.value, NUM)
    if choice == "length":
        text = draw(_tree(TEXT, sub))
        return Typed(_call("length", input=text), len(text.value), NUM)
    items = draw(st.lists(_tree(NUM, sub), max_size=3))
    raw = {"function": "Pure.total", "args": {"values": [i.raw for i in items]}}
    return Typed(raw, sum(i.value for i in items), NUM)


@st.composite
def _sequential(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """A raw sequential plan whose arguments refer to earlier steps in every spelling,
    and the value of each step."""
    plan_input = draw(_WORDS)
    steps: list[dict[str, Any]] = []
    values: list[Any] = []
    kinds: list[str] = []
    names: dict[int, str] = {}

    def arg(kind: str, index: int) -> Typed:
        earlier = [k for k in range(index) if kinds[k] == kind]
        options = ["literal"] + (["ref"] if earlier else [])
        previous = kinds[index - 1] if index else TEXT
        if previous == kind:
            options.append("input")
        how = draw(st.sampled_from(options))
        if how == "input":
            return Typed("$input", values[index - 1] if index else plan_input, kind)
        if how == "literal":
            return draw(_leaf(kind))
        k = draw(st.sampled_from(earlier))
        spelling = draw(st.sampled_from(["$", "#E", "name"] if k in names else ["$", "#E"]))
        text = f"${names[k]}" if spelling == "name" else f"{spelling}{k + 1}"
        return Typed(text, values[k], kind)

    for i in range(draw(st.integers(1, 6))):
        function = draw(st.sampled_from(["add", "neg", "concat", "length", "total", "echo"]))
        previous_kind = kinds[i - 1] if i else TEXT
        if function == "add":
            a, b = arg(NUM, i), arg(NUM, i)
            step, value, kind = _call("add", a=a, b=b), a.value + b.value, NUM
        elif function == "neg":
            x = arg(NUM, i)
            step, value, kind = _call("neg", x=x), -x.value, NUM
        elif function == "concat":
            a, b = arg(TEXT, i), arg(TEXT, i)
            step, value, kind = _call("concat", a=a, b=b), a.value + b.value, TEXT
        elif function == "total":
            items = [arg(NUM, i) for _ in range(draw(st.integers(0, 3)))]
            step = {"function": "Pure.total", "args": {"values": [t.raw for t in items]}}
            value, kind = sum(t.value for t in items), NUM
        else:  # length / echo take `input`: set it, or let the pipe fill it
            piped = values[i - 1] if i else plan_input
            if previous_kind == TEXT and draw(st.booleans()):
                step, text = _call(function), piped
            else:
                given_text = arg(TEXT, i)
                step, text = _call(function, input=given_text), given_text.value
            value, kind = (len(text), NUM) if function == "length" else (text, TEXT)
        if draw(st.booleans()):
            names[i] = f"out{i}"
            step["output"] = names[i]
        steps.append(step)
        values.append(value)
        kinds.append(kind)
    return {"input": plan_input, "subtasks": steps}, values


def _run(plan: SequentialPlan | TreePlan, *, validate_first: bool = True) -> ExecutionResult:
    return Executor(REGISTRY, POLICY).run_sync(plan, validate_first=validate_first)


@given(_sequential())
def test_sequential_references_resolve_to_the_values_they_name(
        case: tuple[dict[str, Any], list[Any]]) -> None:
    raw, values = case
    plan = plan_from_dict(raw)
    result = _run(plan)
    assert result.ok, result.error
    finished = {e.path: e.result for e in result.events if isinstance(e, CallFinished)}
    assert [finished[f"subtasks[{i}]"] for i in range(len(values))] == values
    assert result.value == values[-1]


@given(_tree(NUM, 4) | _tree(TEXT, 4))
def test_a_tree_evaluates_to_its_python_value(case: Typed) -> None:
    if not isinstance(case.raw, dict) or "function" not in case.raw:
        return  # a bare literal is not a plan
    result = _run(plan_from_dict(case.raw))
    assert result.ok, result.error
    assert result.value == case.value


# --- field access: `$1.items[2].deep`, a call's "field" ------------------------------------

_PARTS = st.lists(st.one_of(st.sampled_from(["n", "items", "name", "first", "deep", "zz"]),
                            st.integers(0, 4)), max_size=4)
_MISSING = object()


def _lookup(value: Any, path: list[str | int]) -> Any:
    """Plain Python: a key of an object, an index of a list; _MISSING when there is none."""
    for part in path:
        in_list = isinstance(part, int) and isinstance(value, list) and part < len(value)
        in_object = isinstance(part, str) and isinstance(value, dict) and part in value
        if not (in_list or in_object):
            return _MISSING
        value = value[part]
    return value


def _text(path: list[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


@given(_SMALL, _PARTS, st.sampled_from(["$1", "#E1", "$rec"]), st.booleans())
def test_a_field_reference_gives_that_field_or_an_error_as_data(
        n: int, path: list[str | int], spelling: str, on_call: bool) -> None:
    """A path into a step's result (a reference's, or the step's own "field") gives what
    Python's lookup gives; a path that leads nowhere fails validation or as data."""
    record = {"n": float(n), "items": [float(n), float(n + 1), {"deep": [float(n * 2)]}],
              "name": {"first": "x"}}
    first: dict[str, Any] = {"function": "Pure.record", "args": {"n": n}, "output": "rec"}
    if on_call and path:
        first["field"] = _text(path).removeprefix(".")
        ref = spelling
    else:
        ref = spelling + _text(path)
    raw = {"input": "", "subtasks": [first, {"function": "Pure.keep", "args": {"value": ref}}]}
    try:
        plan = plan_from_dict(raw)
        result = _run(plan)
    except PlanValidationError:
        return
    _assert_data(result)
    expected = _lookup(record, path)
    if expected is _MISSING:
        assert not result.ok
    else:
        assert result.ok, result.error
        assert result.value == expected


# --- hostile plans --------------------------------------------------------------------------

_REFS = ["$1", "$2", "$5", "$0", "$input", "$out0", "$nope", "#E1", "#E3", "$" + "9" * 40]
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                     st.sampled_from(_REFS))
_ARGS = ["a", "b", "x", "input", "values", "zz"]


def _hostile_call() -> st.SearchStrategy[dict[str, Any]]:
    function = st.one_of(st.sampled_from(NAMES), st.sampled_from(["Pure.nope", "Other.add"]))
    leaf = st.builds(lambda f: {"function": f, "args": {}}, function)
    return st.recursive(
        leaf,
        lambda inner: st.builds(
            lambda f, args: {"function": f, "args": args}, function,
            st.dictionaries(st.sampled_from(_ARGS),
                            st.one_of(_SCALARS, inner, st.lists(st.one_of(_SCALARS, inner),
                                                                max_size=3)),
                            max_size=3)),
        max_leaves=10,
    )


def _hostile_plan() -> st.SearchStrategy[dict[str, Any]]:
    step = st.builds(lambda c, o: {**c, "output": o} if o else c, _hostile_call(),
                     st.sampled_from([None, "out0", "out1", "input"]))
    sequential = st.builds(lambda i, s: {"input": i, "subtasks": s}, st.text(max_size=5),
                           st.lists(step, max_size=5))
    return st.one_of(_hostile_call(), sequential)


def _assert_data(result: ExecutionResult) -> None:
    assert isinstance(result, ExecutionResult)
    if not result.ok:
        assert isinstance(result.error, RunError) and result.error.message


@example({"input": "", "subtasks": [{"function": "Pure.add", "args": {"a": "$2", "b": 1}},
                                    {"function": "Pure.add", "args": {"a": "$1", "b": 1}}]})
@example({"function": "Pure.add", "args": {"a": 1e308, "b": 1e308}})  # inf: not JSON
@example({"function": "Pure.fail", "args": {"input": "x"}})
@given(_hostile_plan())
def test_any_plan_is_refused_or_runs_to_data(raw: dict[str, Any]) -> None:
    try:
        plan = plan_from_dict(raw)
    except PlanValidationError:
        return
    try:
        result = _run(plan)
    except PlanValidationError:
        result = None
    if result is not None:
        _assert_data(result)
    _assert_data(_run(plan, validate_first=False))


@given(st.sampled_from(NAMES + ["Pure.nope"]),
       st.dictionaries(st.sampled_from(_ARGS), st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3),
                                                         st.dictionaries(st.text(max_size=3),
                                                                         _SCALARS, max_size=2)),
                       max_size=3),
       st.dictionaries(st.sampled_from(["input", "1", "out0"]), _SCALARS, max_size=3))
def test_one_call_with_hostile_arguments_comes_back_as_data(
        function: str, args: dict[str, Any], context: dict[str, Any]) -> None:
    call = literal_call(function, args)
    result = Executor(REGISTRY, POLICY).run_call_sync(call, context=context)
    _assert_data(result)
    if not result.ok:
        assert result.error is not None and result.error.kind in ("tool", "reference")
