"""Property tests of the output parsers (`localagent.grammar.parse`, `parse_steps`) with
random and hostile model output, over the grammar samples' tool sets (the demo tools and
tools with hostile names and deep types).

The property: `parse_tree`, `parse_sequential`, `parse_react` and `parse_tool_calls` return
their data or raise `PlanValidationError` (`InvalidPlanError` for a call that breaks its
schema) for any text: JSON nested past Python's recursion limit, numbers of thousands of
digits, NaN, unicode, wrong types, reference strings; `json_object_lost` answers a bool.
What a parser accepts is consistent: every call it returns names an offered function.
Examples per test: the hypothesis profile (tests/conftest.py, "ci").
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from localagent.errors import PlanValidationError
from localagent.grammar.parse import (
    ParsedPlan,
    ReactStep,
    ToolCallTurn,
    json_object_lost,
    parse_sequential,
    parse_tree,
)
from localagent.grammar.parse_steps import parse_react, parse_tool_calls
from localagent.grammar.samples import demo_tools, hostile_tools

TOOLS = demo_tools() + hostile_tools(4, description_words=3)
NAMES = [t.qualified_name for t in TOOLS]
PARAMS = sorted({p for t in TOOLS for p in t.parameters.get("properties", {})})

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
    st.sampled_from(["$1", "$2", "$0", "$9", "$input", "#E1", "$" + "9" * 30] + NAMES),
)


def _json_values() -> st.SearchStrategy[Any]:
    keys = st.one_of(st.sampled_from(["function", "args", "input", "subtasks", "reasoning",
                                      "plan", "name", "arguments"] + PARAMS), st.text(max_size=5))
    return st.recursive(_SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=20)


def _calls() -> st.SearchStrategy[dict[str, Any]]:
    function = st.one_of(st.sampled_from(NAMES), st.text(max_size=6), st.integers())
    return st.recursive(
        st.builds(lambda f: {"function": f, "args": {}}, function),
        lambda inner: st.builds(lambda f, a: {"function": f, "args": a}, function,
                                st.dictionaries(st.sampled_from(PARAMS + ["zz"]),
                                                st.one_of(_SCALARS, inner,
                                                          st.lists(st.one_of(_SCALARS, inner),
                                                                   max_size=3)),
                                                max_size=3)),
        max_leaves=10,
    )


def _dump(value: Any) -> str:
    return json.dumps(value, allow_nan=True, ensure_ascii=False)


def _json_texts() -> st.SearchStrategy[str]:
    plans = st.one_of(
        _calls(),
        st.builds(lambda c, r: {"reasoning": r, "plan": c}, _calls(), st.text(max_size=10)),
        st.builds(lambda i, s: {"input": i, "subtasks": s}, st.one_of(st.text(max_size=5),
                                                                      st.integers()),
                  st.lists(_calls(), max_size=4)),
        _json_values(),
    )
    return st.one_of(
        plans.map(_dump),
        plans.map(lambda p: f"```json\n{_dump(p)}\n```"),
        plans.map(lambda p: _dump(p)[:-1]),  # cut short
        st.text(max_size=60),
        st.builds(lambda n, c: c * n, st.integers(1, 100_000), st.sampled_from(["[", '{"a": '])),
        st.builds(lambda n: '{"function": "Math.Multiply", "args": {"value1": ' + "7" * n
                  + ', "value2": 2}}', st.integers(4000, 6000)),
    )


# found: a 5000-digit number made the JSON decoder raise ValueError, nesting past the
# recursion limit RecursionError; neither is a PlanValidationError
DEEP = "[" * 100_000
HUGE = '{"function": "Math.Multiply", "args": {"value1": ' + "7" * 5000 + ', "value2": 2}}'


@example(DEEP)
@example(HUGE)
@example('{"function": "Text.Join", "args": {"items": [' + "[" * 3000 + "]" * 3000 + "]}}")
@given(_json_texts())
def test_parse_tree_gives_a_plan_or_a_plan_error(text: str) -> None:
    try:
        parsed = parse_tree(text, TOOLS)
    except PlanValidationError:
        return
    assert isinstance(parsed, ParsedPlan)
    assert parsed.plan["function"] in NAMES


@example(DEEP, True, None)
@example('{"input": "", "subtasks": [' + HUGE + "]}", False, None)
@example('{"input": "", "subtasks": [{"function": "Math.Multiply", '
         '"args": {"value1": "$' + "9" * 5000 + '", "value2": 1}}]}', True, 6)
@given(_json_texts(), st.booleans(), st.one_of(st.none(), st.integers(0, 6)))
def test_parse_sequential_gives_a_plan_or_a_plan_error(text: str, refs: bool,
                                                       max_steps: int | None) -> None:
    try:
        parsed = parse_sequential(text, TOOLS, max_steps=max_steps, refs=refs)
    except PlanValidationError:
        return
    assert isinstance(parsed, ParsedPlan)
    assert all(step["function"] in NAMES for step in parsed.plan["subtasks"])


def _react_texts() -> st.SearchStrategy[str]:
    action = st.one_of(st.sampled_from(NAMES), st.text(max_size=8))
    body = st.one_of(_json_texts(), _calls().map(lambda c: _dump(c["args"])))
    return st.one_of(
        st.builds(lambda t, a, b: f"Thought: {t}\nAction: {a}\nAction Input: {b}",
                  st.text(max_size=10), action, body),
        st.builds(lambda t, f: f"Thought: {t}\nFinal Answer: {f}", st.text(max_size=10),
                  st.text(max_size=10)),
        st.text(max_size=80),
        st.builds(lambda parts: "\n".join(parts), st.lists(st.sampled_from(
            ["Thought:", "Action:", "Action Input:", "Final Answer:", "{}", "Math.Multiply",
             '{"value1": 1, "value2": 2}', "", " "]), max_size=6)),
    )


@example("Thought: x\nAction: Math.Multiply\nAction Input: " + "[" * 100_000)
@example("Thought: x\nAction: Math.Multiply\nAction Input: {\"value1\": " + "1" * 5000
         + ', "value2": 1}')
@given(_react_texts())
def test_parse_react_gives_a_step_or_a_plan_error(text: str) -> None:
    try:
        step = parse_react(text, TOOLS)
    except PlanValidationError:
        return
    assert isinstance(step, ReactStep)
    assert (step.action is None) != (step.final_answer is None)
    if step.action is not None:
        assert step.action.function in NAMES


def _tool_call_texts() -> st.SearchStrategy[str]:
    def wrapped(payload: str) -> str:
        return f"<tool_call>\n{payload}\n</tool_call>"

    payload = st.one_of(
        st.builds(lambda n, a: _dump({"name": n, "arguments": a}),
                  st.one_of(st.sampled_from(NAMES), _SCALARS), _json_values()),
        _json_texts(),
    )
    return st.one_of(
        st.lists(payload.map(wrapped), min_size=1, max_size=5).map("\n".join),
        st.text(max_size=60),
        st.builds(lambda a, b: a + b, st.text(max_size=10), payload.map(wrapped)),
        payload.map(lambda p: "<tool_call>" + p),
    )


@example("<tool_call>\n" + "[" * 100_000 + "\n</tool_call>", None, True)
@example('<tool_call>\n{"name": "Math.Multiply", "arguments": {"value1": ' + "1" * 5000
         + ', "value2": 1}}\n</tool_call>', 4, False)
@given(_tool_call_texts(), st.one_of(st.none(), st.integers(1, 4)), st.booleans())
def test_parse_tool_calls_gives_a_turn_or_a_plan_error(text: str, max_calls: int | None,
                                                       allow_answer: bool) -> None:
    try:
        turn = parse_tool_calls(text, TOOLS, max_calls=max_calls, allow_answer=allow_answer)
    except PlanValidationError:
        return
    assert isinstance(turn, ToolCallTurn)
    assert bool(turn.calls) != (turn.answer is not None)
    assert all(call.function in NAMES for call in turn.calls)


@example(DEEP)
@example("```json\n" + HUGE)
@given(_json_texts())
def test_json_object_lost_answers_for_any_text(text: str) -> None:
    assert json_object_lost(text) in (True, False)
