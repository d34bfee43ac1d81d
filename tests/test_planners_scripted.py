"""Fast tests of the four planners with a scripted model: retries, loops, ids, grammars."""

from __future__ import annotations

import json

import pytest

from localagent.errors import PlanningError
from localagent.executor import Executor
from localagent.grammars import react_step, tool_call_turn
from localagent.llm import ScriptedLLM
from localagent.plan import SequentialPlan, TreePlan
from localagent.planners.base import PlannerSettings
from localagent.planners.mentions import anchor_to_goal
from localagent.planners.react import ReactPlanner
from localagent.planners.sequential import SequentialPlanner
from localagent.planners.techniques import Techniques
from localagent.planners.tool_calling import ANSWER_ONLY, ToolCallingPlanner
from localagent.planners.tree import TreePlanner
from localagent.tools.registry import default_registry

REASONING = PlannerSettings(techniques=Techniques.parse("reasoning"))
# The loops' own mechanics, without the tools and ReAct defaults' `grounded`
# (a call before any answer, then only observed values; tested in test_techniques.py).
LOOP = PlannerSettings(techniques=Techniques())


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def call(function: str, **args: object) -> dict:
    return {"function": function, "args": args}


INVOICE_PLAN = call("DemoPlugin.Diff",
                    value1=call("DemoPlugin.Total",
                                value1=call("DemoPlugin.GetInvoice", company="C"),
                                value2=call("DemoPlugin.GetInvoice", company="F")),
                    value2=call("DemoPlugin.Total",
                                value1=call("DemoPlugin.GetInvoice", company="A"),
                                value2=call("DemoPlugin.GetInvoice", company="E")))


@pytest.fixture(scope="module")
def registry():
    return default_registry(examples=True)


def test_tree_plan_parsed_and_executed(registry):
    llm = ScriptedLLM([compact({"reasoning": "totals then diff", "plan": INVOICE_PLAN})])
    specs = registry.specs()
    planned = TreePlanner(llm, specs, REASONING).plan("diff of totals")
    assert isinstance(planned.plan, TreePlan)
    assert planned.reasoning == "totals then diff"
    assert llm.requests[0].constraint == TreePlanner(llm, specs, REASONING).constraint()
    assert "{1,320}" in llm.requests[0].constraint.source  # reasoning not capped at 120
    assert Executor(registry).run_sync(planned.plan).value == 21100


def test_truncated_then_invalid_then_valid_is_retried(registry):
    long_text = "{" + " word" * 50
    bad = compact({"reasoning": "x", "plan": call("DemoPlugin.Totl", value1=1, value2=2)})
    good = compact({"reasoning": "x", "plan": call("DemoPlugin.Total", value1=1, value2=2)})
    llm = ScriptedLLM([long_text, bad, good])
    planned = TreePlanner(llm, registry.specs(), PlannerSettings(max_tokens=10)).plan("g")
    assert planned.plan.root.function == "DemoPlugin.Total"
    log = planned.log
    assert (log.truncations, log.parse_failures, log.validation_failures, log.attempts) == (
        1, 0, 1, 3)  # the unknown function parsed, then failed validation
    assert llm.requests[1].max_tokens == 20  # doubled after the truncation


def test_two_truncations_in_a_row_make_the_last_attempt_sample(registry):
    """A greedy loop inside the grammar's bounds repeats itself at any budget (seen on
    gemma-3-270m writing digits): after two truncations the next attempt samples."""
    long_text = "{" + " word" * 50
    good = compact({"reasoning": "x", "plan": call("DemoPlugin.Total", value1=1, value2=2)})
    llm = ScriptedLLM([long_text, long_text, good])
    planned = TreePlanner(llm, registry.specs(), PlannerSettings(max_tokens=10)).plan("g")
    assert planned.plan.root.function == "DemoPlugin.Total"
    assert [r.temperature for r in llm.requests] == [0.0, 0.0, 0.7]
    assert [r.max_tokens for r in llm.requests] == [10, 20, 40]


def test_unconstrained_prose_stops_at_once_and_the_retry_samples(registry):
    """Unconstrained, SmolLM2 wrote 1,600 tokens of prose per attempt, three identical
    greedy attempts per goal: now an output that can no longer parse ends at the character
    that seals it, and the retry samples instead of repeating itself."""
    prose = "You can use the following code: " + "word " * 100
    trailing = compact(INVOICE_PLAN) + " This plan computes the difference."
    good = compact(INVOICE_PLAN)
    llm = ScriptedLLM([prose, trailing, good])
    settings = PlannerSettings(constrain=False, techniques=Techniques.plain())
    planned = TreePlanner(llm, registry.specs(), settings).plan("g")
    assert planned.plan.root.function == "DemoPlugin.Diff"
    assert planned.log.raw[:2] == ["Y", compact(INVOICE_PLAN) + " T"]
    assert planned.log.truncations == 0 and planned.log.parse_failures == 2
    assert [r.temperature for r in llm.requests] == [0.0, 0.7, 0.7]
    # under the grammar nothing is cut, and a greedy retry stays greedy
    constrained = ScriptedLLM(["not json", good])
    TreePlanner(constrained, registry.specs(), PlannerSettings(
        techniques=Techniques.plain())).plan("g")
    assert [r.temperature for r in constrained.requests] == [0.0, 0.0]


def test_json_object_lost_judges_the_start_and_the_end():
    from localagent.grammars import json_object_lost

    alive = ["", "  ", "{", '{"a": 1', '{"a": 1}\n', "`", "```", "```js", "```json\n{",
             '```json\n{"a": 1}\n``', '```json\n{"a": 1}\n```', '{"a": "} not the end']
    lost = ['{"a": 1} and', "You can", "[FINISHED", "`x", "```jq", '```json\n{"a": 1}\n```x',
            "```json\nhello"]
    assert [t for t in alive if json_object_lost(t)] == []
    assert [t for t in lost if not json_object_lost(t)] == []


def test_bounded_retries_raise_planning_error(registry):
    llm = ScriptedLLM(["not json"] * 3)
    with pytest.raises(PlanningError, match="3 attempts"):
        TreePlanner(llm, registry.specs()).plan("g")
    assert len(llm.requests) == 3


def test_unconstrained_passes_no_constraint(registry):
    llm = ScriptedLLM(["```json\n" + compact(INVOICE_PLAN) + "\n```"])
    settings = PlannerSettings(constrain=False, techniques=Techniques.plain())
    planned = TreePlanner(llm, registry.specs(), settings).plan("g")
    assert llm.requests[0].constraint is None
    assert planned.plan.root.function == "DemoPlugin.Diff"


def test_sequential_plan_pipes_input(registry):
    plan = {"input": "hello", "subtasks": [call("TextPlugin.trim"),
                                           call("TextPlugin.uppercase")]}
    llm = ScriptedLLM([compact(plan)])
    planned = SequentialPlanner(llm, registry.specs()).plan("shout hello")
    assert isinstance(planned.plan, SequentialPlan)
    assert Executor(registry).run_sync(planned.plan).value == "HELLO"


def test_prompts_never_show_example_plugins_in_examples(registry):
    llm = ScriptedLLM([compact(INVOICE_PLAN)])
    specs = [s for s in registry.specs() if s.plugin == "TimePlugin"]
    with pytest.raises(PlanningError):
        TreePlanner(llm, specs, PlannerSettings(retries=0)).plan("g")
    prompt = llm.requests[0].prompt
    for name in ("DemoPlugin", "PersonalAssistant", "WeatherPlugin", "CurrencyPlugin"):
        assert name not in prompt


# --- ReAct -----------------------------------------------------------------------------


def react_specs(registry):
    return [registry.spec("PersonalAssistant.GetPersonAge"), registry.spec("MathPlugin.Calculator")]


def test_react_two_steps_then_final_answer_with_prefix_growth(registry):
    llm = ScriptedLLM([
        ('Thought: I need the age.\nAction: PersonalAssistant.GetPersonAge\n'
         'Action Input: {"name": "Furina"}'),
        ('Thought: Now the power.\nAction: MathPlugin.Calculator\n'
         'Action Input: {"expression": "16**0.43"}'),
        "Thought: I now know the final answer\nFinal Answer: 3.2943",
    ])
    out = ReactPlanner(llm, react_specs(registry)).run("Furina's age ** 0.43",
                                                       Executor(registry))
    assert out.answer == "3.2943" and out.stop_reason == "final answer"
    assert [t.function for t in out.turns[:2]] == ["PersonalAssistant.GetPersonAge",
                                                   "MathPlugin.Calculator"]
    assert out.turns[0].observation == 16
    prompts = [r.prompt for r in llm.requests]
    assert prompts[1].startswith(prompts[0]) and prompts[2].startswith(prompts[1])
    assert prompts[1].endswith("\nObservation: 16\n")
    assert out.log.usage.prompt_tokens_reused > 0


def test_react_last_iteration_only_allows_final_answer(registry):
    action = ('Thought: again\nAction: PersonalAssistant.GetPersonAge\n'
              'Action Input: {"name": "Alice"}')
    llm = ScriptedLLM([action, "Thought: done\nFinal Answer: 34"])
    specs = react_specs(registry)
    out = ReactPlanner(llm, specs, LOOP).run("Alice's age", Executor(registry), max_iterations=2)
    assert llm.requests[0].constraint == react_step(specs, final_only=False)
    assert llm.requests[1].constraint == react_step(specs, final_only=True)
    assert out.answer == "34"


def test_react_repeated_call_is_written_again_without_that_function(registry):
    """A step asking for a call the run already made is generated once more with that
    function left out of the grammar; the loop goes on with the new step."""
    action = ('Thought: look\nAction: PersonalAssistant.GetPersonAge\n'
              'Action Input: {"name": "Bob"}')
    llm = ScriptedLLM([action, action,
                       ('Thought: now\nAction: MathPlugin.Calculator\n'
                        'Action Input: {"expression": "2*3"}'),
                       "Thought: done\nFinal Answer: 6"])
    out = ReactPlanner(llm, react_specs(registry)).run("Bob", Executor(registry),
                                                       max_iterations=5)
    assert [t.function for t in out.turns] == ["PersonalAssistant.GetPersonAge",
                                               "MathPlugin.Calculator", None]
    assert out.answer == "6" and out.stop_reason == "final answer"
    grammars = [r.constraint.source for r in llm.requests if r.constraint is not None]
    assert len(grammars) == 4
    assert "GetPersonAge" in grammars[1] and "GetPersonAge" not in grammars[2]
    assert "Calculator" in grammars[2]
    assert any(e.kind == "react_repeat" for e in out.events)


def test_react_repeated_action_with_same_observation_stops(registry):
    """With no other function to write the step with, the repeat is run and its same
    observation stops the loop."""
    action = ('Thought: look\nAction: PersonalAssistant.GetPersonAge\n'
              'Action Input: {"name": "Bob"}')
    llm = ScriptedLLM([action, action, action])
    out = ReactPlanner(llm, [registry.spec("PersonalAssistant.GetPersonAge")]).run(
        "Bob", Executor(registry), max_iterations=5)
    assert out.answer is None
    assert "repeated action PersonalAssistant.GetPersonAge" in out.stop_reason
    assert len(llm.requests) == 2


def test_react_tool_error_is_an_observation(registry):
    llm = ScriptedLLM([
        'Thought: t\nAction: PersonalAssistant.GetPersonAge\nAction Input: {"name": "Zed"}',
        "Thought: t\nFinal Answer: unknown"])
    out = ReactPlanner(llm, react_specs(registry)).run("Zed", Executor(registry))
    assert "no person named" in (out.turns[0].error or "")
    assert "Observation: error:" in llm.requests[1].prompt


# --- tool calling ----------------------------------------------------------------------


def tc(name: str, **args: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def test_tool_calls_in_parallel_matched_by_id(registry):
    specs = [registry.spec("WeatherPlugin.DidItRainToday"),
             registry.spec("CurrencyPlugin.ConvertCurrency")]
    llm = ScriptedLLM([
        tc("WeatherPlugin.DidItRainToday", city="Athens") + "\n"
        + tc("WeatherPlugin.DidItRainToday", city="Madrid"),
        tc("CurrencyPlugin.ConvertCurrency", amount=100, from_currency="EUR",
           to_currency="USD"),
        "You won 108.0 USD.",
    ])
    goal = "Did it rain in Athens or in Madrid? Then 100 EUR in USD"
    out = ToolCallingPlanner(llm, specs, LOOP).run(goal, Executor(registry))
    assert out.answer == "You won 108.0 USD." and out.stop_reason == "answered in text"
    first = out.turns[0].calls
    assert [(c["id"], c["result"]) for c in first] == [("call_1", True), ("call_2", False)]
    tool_msgs = [m for m in out.messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_msgs] == [
        ("call_1", "true"), ("call_2", "false"), ("call_3", "108.0")]
    assistant = next(m for m in out.messages if m.get("tool_calls"))
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    # `mentions` (on in LOOP): the cities and numbers the goal names
    assert llm.requests[0].constraint == tool_call_turn(
        anchor_to_goal(specs, goal), max_calls=4, bounds=_bounds())


def _bounds():
    from localagent.grammar.jsonlark import Bounds

    return Bounds(max_text=400)


def test_tool_calling_last_turn_must_answer(registry):
    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    llm = ScriptedLLM([tc("WeatherPlugin.DidItRainToday", city="Athens"), "It rained."])
    out = ToolCallingPlanner(llm, specs, LOOP).run("rain?", Executor(registry), max_iterations=2)
    assert llm.requests[1].constraint == ANSWER_ONLY
    assert out.answer == "It rained."


def test_tool_calling_must_answer_after_a_turn_repeats_the_same_calls_and_results(registry):
    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    same = tc("WeatherPlugin.DidItRainToday", city="Atlantis")  # fails the same way each time
    llm = ScriptedLLM([same, same, "No city Atlantis is known."])
    out = ToolCallingPlanner(llm, specs, LOOP).run("rain?", Executor(registry), max_iterations=5)
    assert out.answer == "No city Atlantis is known." and len(llm.requests) == 3
    assert llm.requests[2].constraint == ANSWER_ONLY  # no call admitted after the repeat
    assert llm.requests[1].constraint != ANSWER_ONLY
    other = ScriptedLLM([same, tc("WeatherPlugin.DidItRainToday", city="Athens"), "It rained."])
    out = ToolCallingPlanner(other, specs, LOOP).run("rain?", Executor(registry))
    assert out.answer == "It rained." and len(out.turns) == 3


def test_tool_calling_early_exit_without_calls(registry):
    llm = ScriptedLLM(["Hello!"])
    out = ToolCallingPlanner(llm, registry.specs(), LOOP).run("hi", Executor(registry))
    assert out.answer == "Hello!" and len(out.turns) == 1


def test_grounded_tool_calling_probes_the_first_turn_unconstrained(registry):
    """The default (`grounded+decline`) with `native`: before the first turn, which must call a
    tool, a few unconstrained tokens show whether the model would open a call at all
    (`declines`). A reply that opens one goes on to the constrained turn, then the free one
    (`native`); later turns are neither probed nor written twice."""
    from localagent.llm.base import GREEDY_PROBE_TOKENS as DECLINE_PROBE
    from localagent.planners.techniques import parse_spec

    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    call = tc("WeatherPlugin.DidItRainToday", city="Athens")
    llm = ScriptedLLM(["<tool_call>", call, call, "true"])
    planner = ToolCallingPlanner(llm, specs, PlannerSettings(techniques=parse_spec("+native")))
    assert planner.techniques.grounded and planner.techniques.decline
    assert planner.techniques.native
    out = planner.run("Did it rain in Athens today?", Executor(registry))
    assert out.answer == "true" and not out.declined and out.stop_reason == "answered in text"
    assert len(llm.requests) == 4 and len(out.turns) == 2
    probe, first, free, second = llm.requests
    assert probe.constraint is None and probe.max_tokens == DECLINE_PROBE
    assert first.constraint is not None and second.constraint is not None
    assert free.constraint is None
    assert out.turns[0].calls[0]["result"] is True


def test_grounded_tool_calling_declines_when_the_probe_answers_in_prose(registry):
    """The probe replies in prose (no `<tool_call>`, JSON object or fence): no offered tool
    fits, and the run ends declined, with no answer and no constrained turn."""
    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    llm = ScriptedLLM(["None of these tools can write a poem."])
    events = []
    out = ToolCallingPlanner(llm, specs).run("Write a haiku about autumn.",
                                             Executor(registry), on_event=events.append)
    assert out.answer is None and out.declined
    assert out.stop_reason.startswith("declined:")
    assert len(llm.requests) == 1 and llm.requests[0].constraint is None
    assert out.turns == []
    assert [(e.kind, e.detail.get("declined")) for e in events] == [("tool_turn", True)]
    # without constraints there is no probe: the model may answer as it likes
    free = ScriptedLLM(["None of these tools can write a poem."])
    out = ToolCallingPlanner(free, specs, PlannerSettings(
        constrain=False, techniques=Techniques.parse("grounded+decline"))).run(
            "Write a haiku about autumn.", Executor(registry))
    assert not out.declined and len(free.requests) == 1
    # grounded without `decline`: no probe, the first (constrained) turn must call a tool
    forced = ScriptedLLM([tc("WeatherPlugin.DidItRainToday", city="Athens"), "true"])
    out = ToolCallingPlanner(forced, specs, PlannerSettings(
        techniques=Techniques.parse("grounded"))).run(
            "Write a haiku about autumn.", Executor(registry))
    assert not out.declined and forced.requests[0].constraint is not None
    assert out.turns[0].calls and out.answer == "true"
    # a model whose chat template has no tool format is not probed: the first turn calls
    call = tc("WeatherPlugin.DidItRainToday", city="Athens")
    plain = ScriptedLLM([call, call, "true"], chat_format=None)
    assert not plain.info.supports_tools
    out = ToolCallingPlanner(plain, specs).run("Write a haiku about autumn.", Executor(registry))
    assert not out.declined and plain.requests[0].constraint is not None


def test_tool_calling_declines_first_calls_whose_values_the_goal_does_not_state(registry):
    """The probe opens a call, but the first turn calls with a value the goal never writes
    (`stated.stated_share` below `decline.STATED_BELOW`): no offered function fits, and
    the run ends declined before anything runs. The same call for a goal that writes the
    city, in any script, runs."""
    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    call = tc("WeatherPlugin.DidItRainToday", city="Athens")
    llm = ScriptedLLM(["<tool_call>", call, call])
    out = ToolCallingPlanner(llm, specs).run("Write a haiku about autumn.", Executor(registry))
    assert out.declined and out.answer is None and out.turns == []
    assert out.stop_reason == "declined: the goal states too few of the values its first " \
                              "calls need"
    for goal in ("Did it rain in Athens today?", "Athens今天下雨了吗？"):
        llm = ScriptedLLM(["<tool_call>", call, call, "true"])
        out = ToolCallingPlanner(llm, specs).run(goal, Executor(registry))
        assert not out.declined and out.answer == "true"


def test_bare_json_calls_are_read_as_calls(registry):
    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    bare = json.dumps({"name": "WeatherPlugin.DidItRainToday", "arguments": {"city": "Athens"}})
    llm = ScriptedLLM([bare, "It rained, you won."])
    out = ToolCallingPlanner(llm, specs, LOOP).run("rain?", Executor(registry))
    assert out.turns[0].calls[0]["result"] is True
    assert out.answer == "It rained, you won."


def test_a_fenced_json_call_is_a_call_never_an_answer(registry):
    """The default model writes its call as "```json\n{\n  "name": ...}\n```" (pretty
    printed) or as a bare object: the grammar admits both as calls, of offered functions
    only, and an answer never holds a backtick or a brace; the parser reads them as calls."""
    from localagent.llm.constrained import matches
    from localagent.planners.native import wrap_bare_calls

    specs = [s for s in registry.specs() if s.plugin == "DemoPlugin"]
    fenced = ('```json\n{\n  "name": "DemoPlugin.GetInvoice",\n'
              '  "arguments": {\n    "company": "D"\n  }\n}\n```')
    turn = tool_call_turn(specs)
    assert matches(turn, fenced)
    assert matches(turn, '{"name": "DemoPlugin.GetInvoice", "arguments": {"company": "D"}}')
    assert not matches(turn, fenced.replace("GetInvoice", "GetInvoices"))
    assert not matches(turn, fenced.replace('"D"', "4"))  # a string argument
    assert not matches(turn, "The invoice is ```6700```.")
    assert not matches(tool_call_turn(specs, allow_answer=False), "The invoice of D is 6700.")
    assert matches(turn, "The invoice of D is 6700.")
    assert wrap_bare_calls(fenced).startswith("<tool_call>\n{\"name\": \"DemoPlugin.GetInvoice\"")
    one = '{"name": "DemoPlugin.GetInvoice", "arguments": {"company": "D"}}'
    both = f"```json\n{one}\n{one.replace('D', 'E')}\n```"  # several calls in one fence
    assert wrap_bare_calls(both).count("<tool_call>") == 2
    assert wrap_bare_calls("```json\n{not json}\n```") == "```json\n{not json}\n```"


def test_loop_arguments_are_literals_not_plan_syntax(registry):
    """A ReAct or tool-calling model's argument "$5" (a price, say) reaches the function as
    that text: a loop's calls have no earlier steps, so nothing reads it as a reference."""
    specs = [registry.spec("TextPlugin.uppercase")]
    llm = ScriptedLLM([tc("TextPlugin.uppercase", input="$5 or #E1"), "$5 OR #E1"])
    out = ToolCallingPlanner(llm, specs, LOOP).run("Uppercase '$5 or #E1'",
                                                   Executor(registry))
    assert out.turns[0].calls[0]["result"] == "$5 OR #E1", out.turns
    llm = ScriptedLLM([tc("TextPlugin.uppercase", input="$5"), "$5"])
    out = ToolCallingPlanner(llm, specs, LOOP).run("Uppercase '$5'", Executor(registry))
    assert out.turns[0].calls[0]["error"] is None and out.turns[0].calls[0]["result"] == "$5"
    react = ScriptedLLM(['Thought: t\nAction: TextPlugin.uppercase\nAction Input: {"input": "$input"}',
                         "Thought: done\nFinal Answer: $INPUT"])
    out = ReactPlanner(react, specs, LOOP).run("Uppercase '$input'", Executor(registry))
    assert out.turns[0].observation == "$INPUT", out.turns


def test_next_tokens_without_probabilities_is_the_greedy_continuation() -> None:
    """A backend that reads no probabilities (here the scripted one) reports its greedy
    continuation with probability 1, so the decline probe is the greedy probe there."""
    from localagent.llm.base import GREEDY_PROBE_TOKENS
    from localagent.planners.base import GenerationLog
    from localagent.planners.decline import call_probability, first_turn

    llm = ScriptedLLM(["  <tool_call>", "Sure, here it is", "\n\n"])
    nxt = llm.next_tokens("prompt")
    assert nxt.choices == (("  <tool_call>", 1.0),)
    assert llm.requests[0].max_tokens == GREEDY_PROBE_TOKENS
    assert llm.requests[0].temperature == 0.0 and llm.requests[0].constraint is None
    assert call_probability(llm, first_turn("goal"), [], GenerationLog()) == 0.0
    assert call_probability(llm, first_turn("goal"), [], GenerationLog()) == 1.0


NATIVE = PlannerSettings(techniques=Techniques.parse("grounded+native"))
CONVERT = {"name": "CurrencyPlugin.ConvertCurrency",
           "arguments": {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}}


def test_native_values_are_taken_where_both_turns_call_the_same_functions(registry):
    """`native`: after the constrained first turn, the model writes the turn alone (no
    grammar, the goal alone in its template); calling the same functions, its values run
    (here the bare JSON form Qwen2.5-Coder takes by itself)."""
    specs = [registry.spec("CurrencyPlugin.ConvertCurrency")]
    llm = ScriptedLLM([tc("CurrencyPlugin.ConvertCurrency", amount=1, from_currency="EUR",
                          to_currency="USD"), json.dumps(CONVERT), "108.0"])
    out = ToolCallingPlanner(llm, specs, NATIVE).run("100 EUR in USD?", Executor(registry))
    constrained, native, _ = llm.requests
    assert constrained.constraint is not None and native.constraint is None
    assert "100 EUR in USD?" in native.prompt and "helpful assistant with tools" not in native.prompt
    assert out.turns[0].calls[0]["args"] == CONVERT["arguments"] and out.answer == "108.0"


@pytest.mark.parametrize("free", [
    '{"name": "CurrencyPlugin.ConvertCurrency", "arguments": {"amount": "a lot"}}',  # invalid
    '{"name": "CurrencyPlugin.Nope", "arguments": {}}',  # no such function
    "100 EUR is about 108 USD.",  # prose
    json.dumps(CONVERT) + "\n" + json.dumps(CONVERT),  # another number of calls
])
def test_native_turn_that_does_not_agree_leaves_the_constrained_one(registry, free):
    """A free turn that is not all valid calls of the same functions changes nothing: the
    constrained turn runs, so nothing invalid ever runs."""
    specs = [registry.spec("CurrencyPlugin.ConvertCurrency")]
    llm = ScriptedLLM([tc("CurrencyPlugin.ConvertCurrency", amount=100, from_currency="EUR",
                          to_currency="USD"), free, "108.0"])
    out = ToolCallingPlanner(llm, specs, NATIVE).run("100 EUR in USD?", Executor(registry))
    assert len(out.turns[0].calls) == 1 and out.turns[0].calls[0]["args"]["amount"] == 100
    assert out.answer == "108.0"


def test_native_values_fill_only_the_arguments_the_constrained_turn_passes():
    """Merged per argument: the constrained turn's arguments, each with the free turn's
    value where it wrote one; an optional argument only the free turn passes is left out,
    and a merged call that is not valid stays the constrained call."""
    from localagent.grammars import ToolCall, ToolCallTurn
    from localagent.planners.tool_calling import agreed
    from localagent.tools import schema_tool

    spec = schema_tool({"name": "roi", "parameters": {"type": "object", "properties": {
        "rate": {"type": "number"}, "years": {"type": "integer"},
        "unit": {"type": "string", "enum": ["a", "b"]}}, "required": ["rate"]}}).spec
    f = spec.qualified_name
    constrained = ToolCallTurn(calls=(ToolCall(f, {"rate": 3, "years": 1}),
                                      ToolCall(f, {"rate": 5})))
    native = ToolCallTurn(calls=(ToolCall(f, {"rate": 0.03, "unit": "a"}),
                                 ToolCall(f, {"rate": "lots"})))
    merged = agreed(constrained, native, [spec], "a rate of 3%")
    assert merged.calls[0].args == {"rate": 0.03, "years": 1}
    assert merged.calls[1] == constrained.calls[1]


def test_native_functions_win_only_where_they_share_none_and_state_more():
    """The free turn names other functions than the constrained one and the goal states
    more of its values: its calls run. It states no more, or it names some of the same
    functions: the constrained turn's functions stay."""
    from localagent.grammars import ToolCall, ToolCallTurn
    from localagent.planners.tool_calling import agreed
    from localagent.tools import schema_tool

    def tool(name: str, kind: str):
        return schema_tool({"name": name, "parameters": {"type": "object", "properties": {
            "x": {"type": kind}}, "required": ["x"]}}).spec

    light, order = tool("light_time", "number"), tool("order", "string")
    tools = [light, order]
    goal = "How long does light take from a star 4 light years away?"
    constrained = ToolCallTurn(calls=(ToolCall(order.qualified_name, {"x": "Palo Alto"}),))
    native = ToolCallTurn(calls=(ToolCall(light.qualified_name, {"x": 4}),))
    assert agreed(constrained, native, tools, goal) == native
    invented = ToolCallTurn(calls=(ToolCall(light.qualified_name, {"x": 7}),))
    assert agreed(constrained, invented, tools, goal) == constrained
    both = ToolCallTurn(calls=(ToolCall(order.qualified_name, {"x": "star"}),
                               ToolCall(light.qualified_name, {"x": 4})))
    assert agreed(both, native, tools, goal) == both
    assert agreed(constrained, ToolCallTurn(calls=()), tools, goal) == constrained