"""The grammar layer without a model: builders, bounds, caching, parsers, hostile tool sets.

Grammar membership is checked with `matches` (llguidance over a byte tokenizer), so these
tests exercise the very grammar text the model is constrained by.
"""

from __future__ import annotations

import json

import pytest

from localagent import grammars as G
from localagent.errors import ConstraintError, PlanValidationError, TruncatedOutputError
from localagent.grammar.samples import demo_tools, hostile_tools
from localagent.llm.base import Completion, Usage
from localagent.llm.constrained import compile_stats, match_error, matches
from localagent.llm.scripted import ScriptedLLM

TOOLS = demo_tools()

INVOICE = {"function": "DemoPlugin.GetInvoice", "args": {"company": "Acme"}}
NESTED = {"function": "DemoPlugin.Total",
          "args": {"value1": INVOICE, "value2": {"function": "DemoPlugin.GetInvoice",
                                                 "args": {"company": "Globex"}}}}


def j(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- sequential ---------------------------------------------------------------------------


def test_sequential_accepts_a_valid_plan_and_parses_it() -> None:
    c = G.sequential_plan(TOOLS)
    text = j({"input": "Acme", "subtasks": [
        INVOICE, {"function": "Math.Multiply", "args": {"value1": 2, "value2": 3.5}}]})
    assert matches(c, text)
    parsed = G.parse_sequential(text, TOOLS)
    assert parsed.plan["subtasks"][1]["args"] == {"value1": 2, "value2": 3.5}
    assert parsed.reasoning is None


def test_function_names_are_tied_to_their_own_arguments() -> None:
    c = G.sequential_plan(TOOLS)
    wrong = j({"input": "", "subtasks": [{"function": "DemoPlugin.Diff",
                                          "args": {"company": "Acme"}}]})
    assert not matches(c, wrong)
    with pytest.raises(PlanValidationError, match="unknown argument 'company'"):
        G.parse_sequential(wrong, TOOLS)
    missing = j({"input": "", "subtasks": [{"function": "DemoPlugin.Total",
                                            "args": {"value1": 1}}]})
    assert not matches(c, missing)
    unknown = j({"input": "", "subtasks": [{"function": "Nope.F", "args": {}}]})
    assert not matches(c, unknown)
    with pytest.raises(PlanValidationError, match="unknown function"):
        G.parse_sequential(unknown, TOOLS)


def test_sequential_reasoning_field_comes_first() -> None:
    c = G.sequential_plan(TOOLS, reasoning_chars=60)
    text = j({"reasoning": "get the invoice", "input": "Acme", "subtasks": [INVOICE]})
    assert matches(c, text)
    assert not matches(c, j({"input": "Acme", "subtasks": [INVOICE]}))
    assert G.parse_sequential(text, TOOLS).reasoning == "get the invoice"


# --- bounds (Trap 2) ----------------------------------------------------------------------


def test_numbers_strings_lists_and_whitespace_are_bounded() -> None:
    c = G.sequential_plan(TOOLS, max_steps=2, bounds=G.Bounds(max_string=10, max_digits=5))

    def plan(args: dict, n: int = 1, fn: str = "Math.Multiply") -> str:
        return j({"input": "", "subtasks": [{"function": fn, "args": args}] * n})

    assert matches(c, plan({"value1": 12345, "value2": -0.5}))
    assert not matches(c, plan({"value1": 123456, "value2": 1}))  # too many digits
    assert not matches(c, plan({"value1": 1.1234567, "value2": 1}))  # too many decimals
    assert matches(c, plan({"company": "x" * 10}, fn="DemoPlugin.GetInvoice"))
    assert not matches(c, plan({"company": "x" * 11}, fn="DemoPlugin.GetInvoice"))
    assert not matches(c, plan({"value1": 1, "value2": 2}, n=3))  # max_steps
    spaced = plan({"value1": 1, "value2": 2}).replace(": ", ":  ")
    assert not matches(c, spaced)  # no free whitespace anywhere


def test_list_arguments_are_bounded_by_max_items() -> None:
    c = G.react_step(TOOLS)
    call = 'Thought: t\nAction: Text.Join\nAction Input: {"items": [%s]}'
    assert matches(c, call % ", ".join(['"a"'] * 6))
    assert not matches(c, call % ", ".join(['"a"'] * 7))  # the tool's own maxItems


# --- tree ---------------------------------------------------------------------------------


def test_tree_accepts_nested_calls_where_the_return_type_fits() -> None:
    c = G.tree_plan(TOOLS)
    assert matches(c, j(NESTED))
    assert G.parse_tree(j(NESTED), TOOLS).plan == NESTED
    # a string-returning call into a number parameter: rejected by grammar and parser
    bad = {"function": "DemoPlugin.Total",
           "args": {"value1": {"function": "People.HomeCity", "args": {"person": "Bob"}},
                    "value2": 1}}
    assert not matches(c, j(bad))
    with pytest.raises(PlanValidationError, match="does not fit"):
        G.parse_tree(j(bad), TOOLS)
    # anything into a string, and calls inside lists
    joined = {"function": "Text.Join", "args": {"items": [
        {"function": "People.HomeCity", "args": {"person": "Bob"}},
        {"function": "Weather.Temperature", "args": {"city": "Oslo"}}, "x"]}}
    assert matches(c, j(joined))
    G.parse_tree(j(joined), TOOLS)


def test_tree_depth_is_bounded() -> None:
    def chain(n: int) -> dict:
        node: dict = {"function": "Text.Upper", "args": {"text": "x"}}
        for _ in range(n - 1):
            node = {"function": "Text.Upper", "args": {"text": node}}
        return node

    c = G.tree_plan(TOOLS, depth=3)
    assert matches(c, j(chain(3)))
    assert not matches(c, j(chain(4)))
    with pytest.raises(PlanValidationError, match="deeper"):
        G.parse_tree(j(chain(4)), TOOLS, depth=3)


def test_unknown_return_type_fits_only_strings() -> None:
    assert G.fits({"type": "string"}, {})
    assert G.fits({}, {})
    assert not G.fits({"type": "number"}, {})
    assert G.fits({"type": "number"}, {"type": "integer"})
    assert not G.fits({"type": "integer"}, {"type": "number"})
    # an enum takes a call returning its values' type (the executor checks the value)
    assert G.fits({"enum": ["a", "b"]}, {"type": "string"})
    assert not G.fits({"enum": ["a", "b"]}, {"type": "number"})
    assert not G.fits({"enum": ["a", "b"]}, {})
    assert G.fits({"type": "number", "enum": [2, 250]}, {"type": "integer"})
    assert G.fits({"type": "string", "enum": []}, {"type": "string"})  # narrowed to nothing
    assert not G.fits({"const": 1}, {"type": "integer"})


def test_tree_reasoning_wraps_the_plan() -> None:
    c = G.tree_plan(TOOLS, reasoning_chars=80)
    text = j({"reasoning": "add two invoices", "plan": NESTED})
    assert matches(c, text)
    parsed = G.parse_tree(text, TOOLS)
    assert parsed.plan == NESTED and parsed.reasoning == "add two invoices"


# --- ReAct --------------------------------------------------------------------------------


def test_react_action_and_final_answer() -> None:
    c = G.react_step(TOOLS)
    action = 'Thought: need it\nAction: DemoPlugin.GetInvoice\nAction Input: {"company": "Acme"}'
    assert matches(c, action)
    step = G.parse_react(action, TOOLS)
    assert step.action == G.ToolCall("DemoPlugin.GetInvoice", {"company": "Acme"})
    assert matches(c, "Thought: done\nFinal Answer: 21100")
    assert G.parse_react("Thought: done\nFinal Answer: 21100", TOOLS).final_answer == "21100"
    assert not matches(c, 'Thought: x\nAction: DemoPlugin.Total\nAction Input: {"company": "A"}')
    assert not matches(c, "Thought: x\nThought: y\nFinal Answer: 1")


def test_react_final_only_and_allowed_answers() -> None:
    c = G.react_step(TOOLS, final_only=True, allowed_finals=["21100", "Oslo"])
    assert matches(c, "Thought: ok\nFinal Answer: 21100")
    assert not matches(c, "Thought: ok\nFinal Answer: 21101")
    assert matches(c, "Thought: ok\nFinal Answer: Oslo")  # the prefix comes before every one
    assert not matches(c, "Thought: ok\nOslo")
    assert not matches(c, 'Thought: ok\nAction: Text.Upper\nAction Input: {"text": "a"}')


# --- tool-call turn -----------------------------------------------------------------------


def test_tool_call_turn_parallel_calls_or_answer() -> None:
    c = G.tool_call_turn(TOOLS, max_calls=2)
    one = '<tool_call>\n{"name": "Stock.Units", "arguments": {"product": "bolts"}}\n</tool_call>'
    assert matches(c, one)
    assert matches(c, one + "\n" + one)
    assert not matches(c, "\n".join([one] * 3))
    turn = G.parse_tool_calls(one + "\n" + one, TOOLS)
    assert [call.function for call in turn.calls] == ["Stock.Units"] * 2
    assert matches(c, "It is 4.")
    assert G.parse_tool_calls("It is 4.", TOOLS).answer == "It is 4."
    assert not matches(G.tool_call_turn(TOOLS, allow_answer=False), "It is 4.")


def test_call_format_is_a_parameter() -> None:
    fmt = G.CallFormat(open="[CALL]", close="[/CALL]", separator="", name_key="tool",
                       args_key="input")
    c = G.tool_call_turn(TOOLS, call_format=fmt)
    text = '[CALL]{"tool": "Text.Upper", "input": {"text": "a"}}[/CALL]'
    assert matches(c, text)
    assert G.parse_tool_calls(text, TOOLS, call_format=fmt).calls[0].args == {"text": "a"}


def test_strings_and_answers_take_any_script_but_no_emoji() -> None:
    """Values and answers in the world's scripts are admitted (a goal's names are passed
    verbatim, in any language); emoji stay out, so a character bound still bounds tokens."""
    c = G.tool_call_turn(TOOLS)
    for text in ("东京", "Zürich", "Москва", "القاهرة", "नमस्ते", "서울", "とうきょう", "ｔｅｓｔ"):
        call = "<tool_call>\n" + j({"name": "Text.Upper", "arguments": {"text": text}}) \
            + "\n</tool_call>"
        assert matches(c, call), text
        assert matches(c, f"答案是 {text}。"), text
    emoji = "<tool_call>\n" + j({"name": "Text.Upper", "arguments": {"text": "hi 🎉"}}) \
        + "\n</tool_call>"
    assert not matches(c, emoji) and not matches(c, "Done 🎉")


# --- caching, hostile tool sets, truncation ----------------------------------------------


def test_building_the_same_constraint_twice_compiles_once() -> None:
    tools = demo_tools()[:5]
    before = G.build_stats().builds
    a = G.tree_plan(tools, depth=2)
    b = G.tree_plan(list(reversed(demo_tools()[:5])), depth=2)  # same set, other order
    assert a is b and G.build_stats().builds == before + 1
    assert G.tree_plan(tools, depth=3) is not a
    compiled = compile_stats().grammar_compilations
    matches(a, "{}")
    matches(a, "[]")
    assert compile_stats().grammar_compilations == compiled + 1


@pytest.mark.parametrize("builder", [G.sequential_plan, G.tree_plan, G.react_step,
                                     G.tool_call_turn])
def test_hostile_tool_sets_compile(builder) -> None:
    tools = hostile_tools(200)
    c = builder(tools)
    assert match_error(c, "") == "text is incomplete (the grammar expects more)"
    # a call to the first hostile tool with its escaped names round-trips
    t = tools[0]
    key = next(iter(t.parameters["properties"]))
    deep: object = 1
    for level in range(6):
        deep = {f"l{level}": deep}
    args = {key: "v", "deep": deep}
    if builder is G.sequential_plan:
        text = j({"input": "", "subtasks": [{"function": t.qualified_name, "args": args}]})
        assert matches(c, text), match_error(c, text)
        G.parse_sequential(text, tools)
    if builder is G.react_step:
        text = f"Thought: x\nAction: {t.qualified_name}\nAction Input: {j(args)}"
        assert matches(c, text), match_error(c, text)
        assert G.parse_react(text, tools).action.args == args


def test_truncated_output_is_detected_not_returned() -> None:
    llm = ScriptedLLM(['{"input": "", "subtasks": [{"function": "DemoPlugin.Get'])
    completion = llm.complete("plan", max_tokens=5)
    truncated = Completion(text=completion.text, usage=Usage(completion_tokens=5),
                           finish_reason="length")
    with pytest.raises(TruncatedOutputError):
        G.ensure_complete(truncated)
    with pytest.raises(PlanValidationError):
        G.parse_sequential(completion.text, TOOLS)


def test_empty_or_duplicate_tool_sets_are_refused() -> None:
    with pytest.raises(ConstraintError):
        G.tree_plan([])
    with pytest.raises(ConstraintError):
        G.react_step([TOOLS[0], TOOLS[0]])


def test_format_instructions_describe_every_tool() -> None:
    for fmt in G.FORMATS:
        text = G.format_instructions(fmt, TOOLS)
        assert all(t.qualified_name in text for t in TOOLS)
    assert "Total(value1: number, value2: number) -> number" in G.format_instructions(
        "tree", TOOLS)


def test_free_text_excludes_emoji_so_characters_bound_tokens() -> None:
    c = G.react_step(TOOLS)
    assert matches(c, "Thought: Zürich, Ελλάδα, Москва\nFinal Answer: 21 °C")
    assert not matches(c, "Thought: done 🌟 🌟\nFinal Answer: 1")
    assert not matches(c, "Thought: done\nFinal Answer: " + "x" * 161)
    turn = G.tool_call_turn(TOOLS)
    assert not matches(turn, "<b>bold</b>")  # an answer never starts like a call
    assert matches(turn, "It rained: you won 108.0 USD.")
    for call_text in ('>{"name": "A.B", "arguments": {}}', 'Call it: {"name": "A.B"}',
                      "Use `A.B`", "see <tool_call>"):  # nor holds call text anywhere
        assert not matches(turn, call_text), call_text


def test_free_text_calls_may_name_a_function_without_its_plugin_where_unambiguous() -> None:
    """A schema tool is `functions.f`; a model's free reply calls it `f`. With
    `bare_names` that is the call of `functions.f`; a name two plugins share stays
    unknown, and without `bare_names` (grammar output) only qualified names count."""
    from localagent.tools import schema_tool

    def tool(name: str, plugin: str | None = None) -> object:
        schema = {"name": name, "parameters": {"type": "object", "properties": {
            "d": {"type": "integer"}}, "required": ["d"]}}
        return schema_tool(schema, plugin=plugin).spec

    light = tool("light_time")
    text = '<tool_call>\n{"name": "light_time", "arguments": {"d": 4}}\n</tool_call>'
    turn = G.parse_tool_calls(text, [light], bare_names=True)
    assert [(c.function, c.args) for c in turn.calls] == [(light.qualified_name, {"d": 4})]
    with pytest.raises(PlanValidationError, match="unknown function"):
        G.parse_tool_calls(text, [light])
    twice = [tool("light_time", "A"), tool("light_time", "B")]
    with pytest.raises(PlanValidationError, match="unknown function"):
        G.parse_tool_calls(text, twice, bare_names=True)
