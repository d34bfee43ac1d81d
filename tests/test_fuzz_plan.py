"""Property tests of reading and checking plans (`localagent.plan`, `localagent.plan_check`)
with random and hostile JSON, against the real default registry with the example plugins.

The properties:
- `plan_from_dict` / `plan_from_json` / `call_from_dict` / `literal_call` return plan nodes
  or raise `PlanValidationError`, whatever they are given: deep nesting, huge numbers, NaN,
  unicode, wrong types, reference strings (`"$1"`, `"#E0"`, `"$input"`), cycles;
- `validate` of any plan that was read returns or raises `PlanValidationError` listing
  problems (one `path: message` line each), never another exception;
- a plan that was read survives both JSON forms unchanged (`to_json`, `plan_to_raw`).
Examples per test: the hypothesis profile (tests/conftest.py, "ci").
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from localagent.errors import PlanValidationError
from localagent.plan import (
    Call,
    SequentialPlan,
    TreePlan,
    call_from_dict,
    literal_call,
    plan_from_dict,
    plan_from_json,
    plan_to_dict,
    plan_to_raw,
    validate,
)
from localagent.plan_check import check_plan
from localagent.tools.registry import ToolRegistry, default_registry

REGISTRY: ToolRegistry = default_registry(examples=True)
NAMES = REGISTRY.names()
PARAMS = sorted({p for s in REGISTRY.specs() for p in s.parameters.get("properties", {})})

_KEYS = ["function", "args", "kind", "subtasks", "steps", "input", "output", "value", "name",
         "sigil", "root", "reasoning"]
_KINDS = ["call", "ref", "value", "step", "tree", "sequential", "list", "literal", "?", ""]
_REFS = ["$1", "$2", "$3", "$9", "$0", "$01", "$-1", "$input", "$total", "$x", "#E1", "#E2",
         "#E0", "$", "#E", "$1.pages", "$ 1", "$1\n", "\n$1", "$" + "9" * 30, "$" + "9" * 5000,
         "#E" + "1" * 4400, "$\u0661", "$é", "$_", "$input\n"]

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**4000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(_REFS + NAMES + _KINDS),
)


def _json(leaves: st.SearchStrategy[Any] = _SCALARS) -> st.SearchStrategy[Any]:
    """Any JSON-like value; object keys are mostly plan keywords and parameter names."""
    keys = st.one_of(st.sampled_from(_KEYS + PARAMS), st.text(max_size=6))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                st.dictionaries(keys, inner, max_size=5)),
        max_leaves=25,
    )


def _raw_arg(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        _SCALARS,
        st.sampled_from(_REFS),
        st.lists(st.one_of(_SCALARS, st.sampled_from(_REFS), children), max_size=3),
        st.builds(lambda v: {"kind": "value", "value": v}, _json()),
        st.builds(lambda n, s: {"kind": "ref", "name": n, "sigil": s},
                  st.sampled_from(["1", "0", "input", "x", "1x", "", "\u0661"]),
                  st.sampled_from(["$", "#E", "%"])),
        st.dictionaries(st.sampled_from(PARAMS + ["k"]), _SCALARS, max_size=2),
        children,
    )


def _raw_call() -> st.SearchStrategy[dict[str, Any]]:
    """Raw calls `{"function", "args"}`: known and unknown functions, nested calls."""
    function = st.one_of(st.sampled_from(NAMES), st.sampled_from(["", "A.b", "DemoPlugin.Totl",
                                                                  "Demo"]), st.text(max_size=8),
                         st.integers(), st.none())
    return st.recursive(
        st.builds(lambda f: {"function": f, "args": {}}, function),
        lambda inner: st.builds(
            lambda f, args: {"function": f, "args": args},
            function, st.dictionaries(st.sampled_from(PARAMS + ["input", "zz"]), _raw_arg(inner),
                                      max_size=3)),
        max_leaves=12,
    )


def _raw_step() -> st.SearchStrategy[dict[str, Any]]:
    output = st.one_of(st.none(), st.sampled_from(["total", "x", "input", "1x", "", "a b"]),
                       st.integers())
    return st.builds(lambda c, o: {**c, "output": o} if o is not None else c, _raw_call(), output)


def _raw_sequential() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda i, steps: {"input": i, "subtasks": steps},
                     st.one_of(st.text(max_size=10), st.integers(), st.none()),
                     st.lists(_raw_step(), max_size=5))


def _plans() -> st.SearchStrategy[Any]:
    return st.one_of(_raw_call(), _raw_sequential(), _json(),
                     _raw_sequential().map(lambda p: {"kind": "sequential", **p}),
                     _raw_call().map(lambda c: {"kind": "tree", "root": {"kind": "call", **c}}))


def _nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    node: Any = leaf
    for _ in range(depth):
        node = {"function": "DemoPlugin.Total", "args": {"value1": node, "value2": 2}}
    return node


def _problems_are_lines(exc: PlanValidationError) -> None:
    problems = getattr(exc, "problems", (str(exc),))
    assert problems and all(isinstance(p, str) and p for p in problems)


def _read(data: Any) -> SequentialPlan | TreePlan | None:
    try:
        plan = plan_from_dict(data)
    except PlanValidationError as exc:
        _problems_are_lines(exc)
        return None
    assert isinstance(plan, (SequentialPlan, TreePlan))
    return plan


def _check(plan: SequentialPlan | TreePlan) -> None:
    try:
        validate(plan, REGISTRY)
    except PlanValidationError as exc:
        _problems_are_lines(exc)
        assert list(exc.problems) == check_plan(plan, REGISTRY)  # type: ignore[attr-defined]


def _has_nan(value: Any) -> bool:
    text = json.dumps(value, default=str)
    return "NaN" in text


@example({"function": "DemoPlugin.Total", "args": {"value1": 10**5000}})
@example({"subtasks": [{"function": "DemoPlugin.Total", "args": {"value1": "$2"}},
                       {"function": "DemoPlugin.Total", "args": {"value1": "$1"}}]})
@example({"subtasks": [{"function": "DemoPlugin.Total", "args": {"value1": "$x"},
                        "output": "x"}]})
# found: a step reference of thousands of digits made Ref.step raise ValueError (int())
@example({"subtasks": [{"function": "DemoPlugin.Total",
                        "args": {"value1": "$" + "9" * 5000, "value2": "#E" + "1" * 4400}}]})
@given(_plans())
def test_reading_and_checking_any_plan_gives_typed_errors(data: Any) -> None:
    plan = _read(data)
    if plan is not None:
        _check(plan)


@example({"kind": "tree", "root": {"kind": "call", "function": "TextPlugin.uppercase",
                                    "args": {"input": "$1"}}})
# found: Infinity was written as null by to_json (pydantic's default for inf and NaN)
@example({"function": "CurrencyPlugin.ConvertCurrency", "args": {"amount": math.inf}})
# found: the typed form took a step output named "input", which the raw form refuses
@example({"kind": "sequential", "input": "", "subtasks": [
    {"kind": "step", "function": "TextPlugin.uppercase", "args": {}, "output": "input"}]})
@given(_plans())
def test_a_plan_survives_both_json_forms(data: Any) -> None:
    plan = _read(data)
    if plan is None or _has_nan(plan_to_dict(plan)):
        return  # NaN != NaN: a round trip cannot compare equal
    assert plan_from_json(plan.to_json()) == plan
    assert plan_from_dict(plan_to_dict(plan)) == plan
    # found: a literal string spelling a reference (`"$1"` in the typed form) came back
    # from the raw form as a reference; now it is written as a Value, the same literal
    again = plan_from_dict(plan_to_raw(plan))
    assert _literals(plan_to_dict(again)) == _literals(plan_to_dict(plan))
    assert plan_from_dict(plan_to_raw(again)) == again


def _literals(node: Any) -> Any:
    """The typed form with `{"kind": "value", "value": v}` read as `v` when that is no
    object: the same literal either way."""
    if isinstance(node, list):
        return [_literals(item) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("kind") == "value" and set(node) == {"kind", "value"} and not isinstance(
            node["value"], dict):
        return node["value"]
    return {key: _literals(value) for key, value in node.items()}


def _json_texts() -> st.SearchStrategy[str]:
    def dumped(value: Any) -> str:
        return json.dumps(value, allow_nan=True)

    return st.one_of(
        st.text(max_size=40),
        _plans().map(dumped),
        st.builds(lambda n, c: c * n, st.integers(1, 200_000), st.sampled_from(["[", "{\"a\":"])),
        st.builds(lambda n: "1" * n, st.integers(4000, 6000)),
        st.builds(lambda n: '{"function": "DemoPlugin.Total", "args": {"value1": ' + "9" * n + "}}",
                  st.integers(4000, 6000)),
        st.sampled_from(["", "null", "NaN", "-Infinity", "1e999999", '{"function": "A.b"}x',
                         '"\\ud800"', '{"function": "\\u0000"}']),
    )


@example("1" * 5000)  # found: int() refused > 4300 digits with a ValueError, not a plan error
@example("[" * 100_000)  # found: RecursionError from the JSON decoder
@given(_json_texts())
def test_reading_any_text_as_a_plan_gives_typed_errors(text: str) -> None:
    try:
        plan = plan_from_json(text)
    except PlanValidationError as exc:
        _problems_are_lines(exc)
        return
    _check(plan)


@given(st.one_of(_raw_call(), _json(), _raw_arg(_raw_call())))
def test_reading_one_call_gives_a_call_or_a_typed_error(data: Any) -> None:
    try:
        call = call_from_dict(data)
    except PlanValidationError as exc:
        _problems_are_lines(exc)
        return
    assert isinstance(call, Call)


@given(st.one_of(st.sampled_from(NAMES), st.text(max_size=8)),
       st.dictionaries(st.text(max_size=6), _json(), max_size=4))
def test_a_literal_call_keeps_every_value_literal(function: str, args: dict[str, Any]) -> None:
    try:
        call = literal_call(function, args)
    except PlanValidationError as exc:
        _problems_are_lines(exc)
        return
    assert not list(call.refs()) and not list(call.children())


def _depth_refused(read: Any) -> None:
    """Reading refuses the plan, or the check does: deeper than the limit either way."""
    try:
        plan = read()
    except PlanValidationError as exc:
        _problems_are_lines(exc)
        return
    with pytest.raises(PlanValidationError, match="nesting depth exceeds"):
        validate(plan, REGISTRY)


@pytest.mark.parametrize("depth", [5, 50, 400, 2000, 20_000])
def test_deep_nesting_in_a_dict_is_a_plan_error(depth: int) -> None:
    _depth_refused(lambda: plan_from_dict(_nested(depth)))


@pytest.mark.parametrize("depth", [5, 50, 400, 2000, 20_000])
def test_deep_nesting_in_json_text_is_a_plan_error(depth: int) -> None:
    head = '{"function": "DemoPlugin.Total", "args": {"value2": 2, "value1": '
    _depth_refused(lambda: plan_from_json(head * depth + "1" + "}}" * depth))


def test_a_reference_with_a_trailing_newline_is_a_literal_string() -> None:
    """found: `re.match` with `$` also matched before a final newline, so "$1\n" was read
    as the reference $1 (and a typed Ref named "1\n" was accepted)."""
    plan = plan_from_dict({"function": "TextPlugin.uppercase", "args": {"input": "$1\n"}})
    assert isinstance(plan, TreePlan) and plan.root.args["input"] == "$1\n"
    with pytest.raises(PlanValidationError):
        plan_from_dict({"kind": "tree", "root": {"kind": "call", "function": "A.b", "args": {
            "x": {"kind": "ref", "name": "1\n"}}}})


def test_nan_and_infinity_are_read_and_checked_without_a_crash() -> None:
    plan = plan_from_json('{"function": "DemoPlugin.Total", "args": {"value1": NaN, '
                          '"value2": -Infinity}}')
    assert isinstance(plan, TreePlan)
    value1 = plan.root.args["value1"]
    assert isinstance(value1, float) and math.isnan(value1)
    _check(plan)
