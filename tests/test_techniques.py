"""The planning techniques of issue 8, each tested where it acts: grammar, parser, prompt,
example choice (real MiniLM), and plan-and-execute (scripted model, real executor)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Literal

import pytest

from localagent.bench.scenarios import INVOICE_TRANSLATED
from localagent.errors import ConstraintError, PlanValidationError, UsageError
from localagent.executor import Executor
from localagent.grammars import (
    parse_sequential,
    react_step,
    sequential_plan,
    tool_call_turn,
    tree_plan,
)
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.examples import ExampleSelector, flatten, load_library, steps_text
from localagent.planners.grounding import observed_values
from localagent.planners.plan_runner import plan_and_execute
from localagent.planners.sequential import SequentialPlanner, piped
from localagent.planners.techniques import (
    TechniqueChanges,
    Techniques,
    default_techniques,
    parse_spec,
    parse_variants,
    resolve,
)
from localagent.planners.tree import TreePlanner
from localagent.tools.decorator import tool
from localagent.tools.manual import render_manual
from localagent.tools.registry import default_registry
from localagent.tools.spec import ToolSpec


def compact(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "))


def call(function: str, **args: object) -> dict:
    return {"function": function, "args": args}


@pytest.fixture(scope="module")
def registry():
    return default_registry(examples=True)


def demo(registry) -> list:
    return [s for s in registry.specs() if s.plugin == "DemoPlugin"]


# --- the switches ---------------------------------------------------------------------

def test_techniques_parse_label_and_reject_bad_specs() -> None:
    t = Techniques.parse("reasoning+replan=2")
    assert (t.reasoning, t.replan, t.similar, t.vote, t.mentions) == (True, 2, False, 1, False)
    assert t.label == "reasoning+replan=2"
    assert Techniques.parse("plain").label == "plain"
    assert parse_spec("default") is None and parse_spec("") is None
    assert parse_spec("plain") == Techniques.plain()
    assert [v.label for v in parse_variants("plain; reasoning;plain")] == ["plain", "reasoning"]
    assert parse_variants("default;plain") == [None, Techniques.plain()]
    for bad in ("reasonin", "vote=x", "reasoning=1", "vote=0", "replan=9"):
        with pytest.raises(UsageError):
            Techniques.parse(bad)
    with pytest.raises(UsageError, match="unknown technique 'once'"):
        Techniques.parse("once")  # deleted: it read a goal's words to forbid nesting


def test_relative_spec_changes_each_planners_own_default() -> None:
    changes = parse_spec("+replan=2,-mentions")
    assert isinstance(changes, TechniqueChanges) and changes.label == "+replan=2,-mentions"
    assert resolve(changes, "tree") == replace(default_techniques("tree"), replan=2,
                                               mentions=False)
    assert resolve(changes, "sequential").label == "distinct+typed+backrefs+replan=2"
    # spaces or nothing between items read the same; the label is canonical (ons first)
    for same in ("+replan=2 -mentions", " -mentions , +replan=2 ", "-mentions+replan=2"):
        assert parse_spec(same) == changes, same
    decline = parse_spec("-decline")
    assert resolve(decline, "tools") == Techniques(mentions=False, backrefs=False,
                                                   grounded=True, fresh=True, tags=True,
                                                   observe=True)
    # adding a switch a default has already on changes nothing (and is no error)
    more = parse_spec("+grounded,+similar,+vote=3")
    assert resolve(more, "tools") == replace(default_techniques("tools"), similar=True,
                                             vote=3)
    assert resolve(more, "tree").label == "similar+mentions+grounded+values+vote=3"
    # the absolute forms are unchanged; None is each planner's default
    assert resolve(parse_spec("grounded+decline"), "tree").label == "grounded+decline"
    assert resolve(parse_spec("default"), "react") == default_techniques("react")
    # settings, the agent and the benchmark resolve changes per planner
    settings = PlannerSettings(techniques=changes)
    assert settings.for_planner("tree")[1].label == "values+replan=2"
    assert [v.label if v else "default" for v in parse_variants(
        "default;+replan=2,-mentions;-mentions +replan=2;plain")] == [
        "default", "+replan=2,-mentions", "plain"]


@pytest.mark.parametrize(("spec", "planner", "message"), [
    ("+nope", "tree", "unknown technique 'nope' in '\\+nope'; choose from reasoning, "),
    ("-once,+similar", "tree", "unknown technique 'once'"),
    ("-decline", "tree", (r"cannot remove technique decline: it is not on in the tree "
                          r"planner's default \(mentions\+values\)")),
    ("-mentions", "tools", (r"cannot remove technique mentions: it is not on in the tools "
                            r"planner's default \(grounded\+decline\+fresh\+tags\+observe\)")),
    ("-vote", "tree", "cannot remove technique vote"),
    ("+replan", "tree", "technique replan needs a whole number, e.g. \\+replan=2"),
    ("+replan=x", "tree", "needs a whole number"),
    ("+replan=9", "tree", "replan must be between 0 and 5, got 9"),
    ("+similar=1", "tree", "technique similar takes no value"),
    ("-replan=2", "tree", "removing a technique takes no value"),
    ("+similar,-similar", "tree", "technique similar is changed twice"),
    ("+similar grounded", "tree", "every item is \\+name, \\+name=N or -name"),
    ("grounded,-decline", "tools", "write either switches .* or only changes"),
])
def test_relative_spec_errors_are_one_line(spec: str, planner: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        resolve(parse_spec(spec), planner)
    assert "\n" not in caught.value.one_line()


def test_agent_rejects_a_bad_change_before_planning() -> None:
    from localagent.agent import Agent

    llm = ScriptedLLM([])  # any model call would fail: nothing is scripted
    agent = Agent(llm, techniques="-decline")
    with pytest.raises(UsageError, match="not on in the tree planner's default"):
        agent.plan("What is the invoice amount of company D?", planner="tree")
    with pytest.raises(UsageError, match="not on in the react planner's default"):
        agent.run("What is the invoice amount of company D?", planner="react")
    assert not llm.requests


def test_benchmark_resolves_changes_per_planner(tmp_path) -> None:
    from localagent.bench.runner import plan_runs
    from localagent.bench.suite import load_suite

    path = tmp_path / "one.yaml"
    path.write_text("name: one\ntasks:\n  - {id: d, category: single, goal: 'Invoice of D?',"
                    " plugins: [DemoPlugin], expect: {number: 6700}}\n", encoding="utf-8")
    specs = plan_runs(load_suite(path), ["tree", "tools"], ["m"], [True], ["none"], 1,
                      parse_variants("+replan=2"))
    assert {s.planner: s.techniques.label for s in specs} == {
        "tree": "mentions+values+replan=2", "tools": "grounded+decline+fresh+tags+observe+replan=2"}


# --- backward references in step-list plans -------------------------------------------

SEQ = {"input": "", "subtasks": [call("DemoPlugin.GetInvoice", company="C"),
                                  call("DemoPlugin.GetInvoice", company="F"),
                                  call("DemoPlugin.Total", value1="$1", value2="$2")]}
FORWARD = {"input": "", "subtasks": [call("DemoPlugin.Total", value1="$2", value2="$3"),
                                     call("DemoPlugin.GetInvoice", company="C"),
                                     call("DemoPlugin.GetInvoice", company="F")]}


def test_backrefs_grammar_admits_earlier_steps_only(registry) -> None:
    tools = [piped(t) for t in demo(registry)]
    backward = sequential_plan(tools, refs="backward")
    anyref = sequential_plan(tools, refs="any")
    none = sequential_plan(tools, refs="none")
    assert matches(backward, compact(SEQ)) and matches(anyref, compact(SEQ))
    assert not matches(none, compact(SEQ))  # "$1" is no number
    assert matches(anyref, compact(FORWARD))
    assert not matches(backward, compact(FORWARD))  # step 1 may not name $2


def test_parser_accepts_references_and_rejects_forward_ones(registry) -> None:
    tools = [piped(t) for t in demo(registry)]
    assert parse_sequential(compact(SEQ), tools, refs=True).plan == SEQ
    with pytest.raises(PlanValidationError, match="not available yet"):
        parse_sequential(compact(FORWARD), tools, refs=True)
    with pytest.raises(PlanValidationError):  # without refs "$1" is a wrong type
        parse_sequential(compact(SEQ), tools)


def test_sequential_plan_with_references_runs(registry) -> None:
    llm = ScriptedLLM([compact({"reasoning": "two lookups, a total", **SEQ})])
    planner = SequentialPlanner(llm, demo(registry))
    planned = planner.plan("total of C and F")
    assert Executor(registry).run_sync(planned.plan).value == 24100


# --- reasoning and examples -----------------------------------------------------------

def test_reasoning_switch_changes_grammar_and_prompt(registry) -> None:
    on = TreePlanner(ScriptedLLM([]), demo(registry), PlannerSettings(
        techniques=Techniques.parse("reasoning")))
    off = TreePlanner(ScriptedLLM([]), demo(registry), PlannerSettings(
        techniques=Techniques.plain()))
    assert '\\"reasoning\\"' in on.constraint().source
    assert "reasoning" not in off.constraint().source
    assert '"reasoning"' in on.messages("g")[1]["content"]
    assert '"reasoning"' not in off.messages("g")[1]["content"]


def test_library_plans_flatten_to_valid_steps() -> None:
    library = load_library()
    assert len(library) >= 20 and sum(p.fixed for p in library) >= 3
    nested = next(p for p in library if p.goal.startswith("How many more apples"))
    steps = flatten(nested.plan)
    assert [s["function"] for s in steps] == ["Inventory.GetStock", "Inventory.GetStock",
                                             "Inventory.GetStock", "Math.Add", "Math.Subtract"]
    assert steps[-1]["args"] == {"value1": "$1", "value2": "$4"}
    assert steps_text(steps).startswith("1. Inventory.GetStock(apples); ")
    email = next(p for p in library if p.goal.startswith("Write an email")).sequential()
    assert email["input"] == "our new boat"  # the first literal input is the plan's input
    assert email["subtasks"][1] == {"function": "Style.Pirate", "args": {}}  # piped


def test_similar_examples_are_the_nearest_goals() -> None:
    """Real MiniLM embeddings in Chroma: a flight question gets flight examples."""
    selector = ExampleSelector()
    chosen = selector.similar("How much does a plane ticket to Madrid cost?", k=3)
    assert len(chosen) == 3
    assert chosen[-1].goal == "How much does a flight to Oslo cost?"  # nearest is last
    music = selector.similar("When was the singer of the song Night Train born?", k=2)
    assert any("Golden Road" in p.goal for p in music)


# --- grounded answers -----------------------------------------------------------------

def test_observed_values() -> None:
    values = observed_values([16, {"city": "Paris", "rain": True}, ["a", "b"]])
    assert values[:2] == ["a", "b"] and "a, b" in values
    assert {"16", "Paris", "true", "yes", "no"} <= set(values)


def test_grounded_react_grammar_admits_only_observed_answers(registry) -> None:
    tools = demo(registry)
    grounded = react_step(tools, allowed_finals=["21100", "6700"])
    assert matches(grounded, "Thought: done\nFinal Answer: 21100")
    assert matches(grounded, "Thought: done\nFinal Answer: 6700")  # every one, after the prefix
    assert not matches(grounded, "Thought: done\n6700")
    assert not matches(grounded, "Thought: done\nFinal Answer: 21000")
    must_act = react_step(tools, allow_final=False)
    assert not matches(must_act, "Thought: done\nFinal Answer: 21100")
    assert matches(must_act, 'Thought: look\nAction: DemoPlugin.GetInvoice\n'
                             'Action Input: {"company": "C"}')


def test_grounded_tool_turn_answers_only_observed_values(registry) -> None:
    turn = tool_call_turn(demo(registry), allowed_answers=["24100"])
    assert matches(turn, "24100")
    assert not matches(turn, "The total is 24000")


def test_each_planner_has_its_measured_default(registry) -> None:
    from localagent.planners.react import ReactPlanner
    from localagent.planners.tool_calling import ToolCallingPlanner

    tools = demo(registry)
    goal = "What is the invoice of company C?"
    # the default `decline` first probes the model unconstrained (`declines`): a reply
    # that opens a call goes on to the constrained first turn
    answer_first = ScriptedLLM(["<tool_call>", "The invoice is 1000.", "unused"])
    tc = ToolCallingPlanner(answer_first, tools)  # default settings: the measured default
    assert tc.techniques.grounded and tc.techniques.label == "grounded+decline+fresh+tags+observe"
    tc.run(goal, Executor(registry), max_iterations=2)
    assert answer_first.requests[0].constraint is None  # the decline probe
    assert not matches(answer_first.requests[1].constraint, "The invoice is 1000.")
    # an explicit configuration is used as given, whatever the planner
    explicit = ToolCallingPlanner(ScriptedLLM([]), tools, PlannerSettings(techniques=Techniques()))
    assert not explicit.techniques.grounded
    assert ReactPlanner(ScriptedLLM([]), tools).techniques == Techniques(
        mentions=False, backrefs=False, grounded=True)
    assert TreePlanner(ScriptedLLM([]), tools).techniques == Techniques(backrefs=False,
                                                                        values=True)
    assert SequentialPlanner(ScriptedLLM([]), tools).techniques == Techniques(
        typed=True, distinct=True)
    assert {p: default_techniques(p).label for p in ("tools", "react", "tree", "sequential")} \
        == {"tools": "grounded+decline+fresh+tags+observe", "react": "grounded", "tree": "mentions+values",
            "sequential": "mentions+distinct+typed+backrefs"}


@pytest.mark.parametrize("name", ["cover", "calls", "together", "check", "answer", "head",
                                  "nouns", "result", "named"])
def test_the_english_only_techniques_are_deleted(name: str) -> None:
    """They read English words (cue words, question words, possessives): no longer a
    switch, in either form of a spec."""
    with pytest.raises(UsageError, match=f"unknown technique '{name}'"):
        parse_spec(name)
    with pytest.raises(UsageError, match=f"unknown technique '{name}'"):
        parse_spec(f"+{name}")


# --- re-planning and voting (scripted model, real executor) ---------------------------

def run_tree(registry, outputs: list[str], spec: str):
    llm = ScriptedLLM(outputs)
    settings = PlannerSettings(techniques=Techniques.parse(spec))
    planner = TreePlanner(llm, demo(registry), settings)
    run = plan_and_execute(planner, "diff", lambda: Executor(registry), GenerationLog())
    return run, llm


def test_replan_sends_the_error_back_and_runs_the_corrected_plan(registry) -> None:
    # inf is not JSON: the executor reports the result as unserialisable
    bad = compact({"function": "DemoPlugin.Total", "args": {"value1": 1e308, "value2": 1e308}})
    good = compact(call("DemoPlugin.Total", value1=1, value2=2))
    run, llm = run_tree(registry, [bad, good], "replan=1")
    assert [a.ok for a in run.attempts] == [False, True]
    assert run.chosen is not None and run.chosen.result.value == 3
    followup = llm.requests[1].prompt
    assert "Running this plan failed" in followup and run.attempts[0].error in followup


def test_without_replan_a_failed_execution_is_the_answer(registry) -> None:
    bad = compact({"function": "DemoPlugin.Total", "args": {"value1": 1e308, "value2": 1e308}})
    run, _ = run_tree(registry, [bad], "plain")
    assert run.chosen is None and run.error and len(run.attempts) == 1


def test_vote_takes_the_majority_and_runs_identical_plans_once(registry) -> None:
    three = compact(call("DemoPlugin.Total", value1=1, value2=2))
    four = compact(call("DemoPlugin.Total", value1=2, value2=2))
    run, llm = run_tree(registry, [four, three, three], "vote=3")
    assert run.votes == {"4": 1, "3": 2}
    assert run.chosen.result.value == 3
    assert len(run.executed) == 2  # the repeated plan ran once
    assert [r.temperature for r in llm.requests] == [0.0, 0.7, 0.7]


def test_steps_reasoning_names_only_real_functions(registry) -> None:
    tools = demo(registry)
    planner = TreePlanner(ScriptedLLM([]), tools,
                          PlannerSettings(techniques=Techniques.parse("steps")))
    plan = call("DemoPlugin.Total", value1=call("DemoPlugin.GetInvoice", company="C"), value2=5)
    good = ("1. DemoPlugin.GetInvoice(C); 2. DemoPlugin.Total(step 1, 5)")
    assert matches(planner.constraint(), compact({"reasoning": good, "plan": plan}))
    invented = "1. DemoPlugin.GetInvoice(C); 2. Math.Max(step 1, 5)"
    assert not matches(planner.constraint(), compact({"reasoning": invented, "plan": plan}))
    seven = "; ".join(f"{k}. DemoPlugin.GetInvoice(C)" for k in range(1, 8))
    assert not matches(planner.constraint(), compact({"reasoning": seven, "plan": plan}))


def test_mentions_leave_only_named_keys(registry) -> None:
    """"the invoice of C plus D's": company may be C or D; a goal naming no company, with no
    function that returns one, leaves the enum whole (the function stays callable)."""
    from localagent.planners.mentions import anchor_to_goal, mentioned

    assert mentioned("C", "the invoice of C plus D's") and not mentioned("C", "the CFO")
    tools = demo(registry)
    anchored = anchor_to_goal(tools, "What is the invoice of company C plus the one of D?")
    invoice = next(t for t in anchored if t.name == "GetInvoice")
    assert invoice.parameters["properties"]["company"]["enum"] == ["C", "D"]
    planner = TreePlanner(ScriptedLLM([]), tools, PlannerSettings(techniques=Techniques.parse(
        "mentions")))
    goal = "What is the invoice of company C plus the one of D?"
    grammar = planner.constraint(planner.tools_for(goal))
    ok = call("DemoPlugin.Total", value1=call("DemoPlugin.GetInvoice", company="C"),
              value2=call("DemoPlugin.GetInvoice", company="D"))
    guessed = call("DemoPlugin.Total", value1=call("DemoPlugin.GetInvoice", company="C"),
                   value2=call("DemoPlugin.GetInvoice", company="A"))
    assert matches(grammar, compact(ok)) and not matches(grammar, compact(guessed))
    nothing = planner.tools_for("What is the biggest invoice?")
    whole = next(t for t in nothing if t.name == "GetInvoice")
    assert whole == next(t for t in tools if t.name == "GetInvoice")
    assert matches(planner.constraint([whole]), compact(call("DemoPlugin.GetInvoice",
                                                             company="A")))


def _spec(name: str, props: dict, returns: dict) -> ToolSpec:
    return ToolSpec("Money", name, name, {"type": "object", "properties": props,
                                          "required": list(props)}, returns)


CURRENCY = {"type": "string", "enum": ["USD", "EUR"]}
TO_CURRENCY = _spec("Convert", {"amount": {"type": "number"}, "source": CURRENCY,
                            "target": CURRENCY}, {"type": "number"})
HOME_CURRENCY = _spec("HomeCurrency", {"country": {"type": "string", "enum": ["Kenya", "Chile"]}},
             {"type": "string"})


def test_mentions_narrow_an_enum_to_nothing_only_when_a_call_can_give_its_value() -> None:
    """The goal names no currency code: with no function returning a currency, both enums
    stay whole and the function stays in the grammar; with one, the value must come from
    it (a nested call) and a code the goal does not state is refused."""
    from localagent.planners.mentions import anchor_to_goal

    def planner(tools: list) -> TreePlanner:
        return TreePlanner(ScriptedLLM([]), tools, PlannerSettings(
            techniques=Techniques.parse("mentions")))

    goal = "How many dollars is 100 euros?"
    props = anchor_to_goal([TO_CURRENCY], goal)[0].parameters["properties"]
    assert props["source"] == props["target"] == CURRENCY
    alone = planner([TO_CURRENCY])
    plan = call("Money.Convert", amount=100, source="EUR", target="USD")
    assert matches(alone.constraint(alone.tools_for(goal)), compact(plan))
    step = react_step(anchor_to_goal([TO_CURRENCY], goal))
    assert matches(step, 'Thought: t\nAction: Money.Convert\nAction Input: '
                         '{"amount": 100, "source": "EUR", "target": "USD"}')

    goal = "How much is 100 in the currency of Kenya, in the currency of Chile?"
    both = planner([TO_CURRENCY, HOME_CURRENCY])
    convert = anchor_to_goal([TO_CURRENCY, HOME_CURRENCY], goal)[0].parameters["properties"]
    assert convert["source"]["enum"] == convert["target"]["enum"] == []
    grammar = both.constraint(both.tools_for(goal))

    def home(country: str) -> dict:
        return call("Money.HomeCurrency", country=country)

    looked_up = call("Money.Convert", amount=100, source=home("Kenya"), target=home("Chile"))
    guessed = call("Money.Convert", amount=100, source="USD", target=home("Chile"))
    assert matches(grammar, compact(looked_up)) and not matches(grammar, compact(guessed))
    # a function's own result does not count: its innermost call would need a value too
    boss = _spec("Boss", {"name": {"type": "string", "enum": ["Ann", "Bo"]}},
                 {"type": "string", "enum": ["Ann", "Bo"]})
    assert anchor_to_goal([boss], "Who is the boss of the boss?")[0] == boss


def test_mentions_list_the_named_values_in_the_goals_order() -> None:
    """Two values of one enum are listed in the order the goal writes them, whatever
    the enum's own order and the goal's language; the grammar still admits either."""
    from localagent.planners.mentions import anchor_to_goal

    for goal, expected in (("I bet 100 EUR. How many USD is that?", ["EUR", "USD"]),
                           ("¿Cuántos USD son 100 EUR?", ["USD", "EUR"]),
                           ("100 EUR是多少USD？", ["EUR", "USD"])):
        props = anchor_to_goal([TO_CURRENCY], goal)[0].parameters["properties"]
        assert props["source"]["enum"] == props["target"]["enum"] == expected, goal


def test_mentions_read_values_and_numbers_in_every_script(registry) -> None:
    """A value is named where the characters next to it do not continue it: a letter or
    digit of its own spaced script does, punctuation, spaces and characters of a script
    written without spaces do not; a value in such a script is found anywhere."""
    from localagent.planners.mentions import anchor_to_goal, mentioned, stated_numbers

    for goal in ("Leena的年薪是多少？", "What is Leena's salary?", "¿Cuál es el sueldo de Leena?",
                 "Wie hoch ist Leenas Gehalt, Leena?", "Leenaの給料は？", "Leena의 연봉은?",
                 "Зарплата Leena?", "ＬＥＥＮＡ的年薪"):
        assert mentioned("Leena", goal), goal
    for goal in ("Wie hoch ist Leenas Gehalt?", "Leena2", "Leenaé", "Kleena", "Leena_x"):
        assert not mentioned("Leena", goal), goal
    assert mentioned("Kenya", "Kenya的首都") and not mentioned("Kenya", "the Kenyan capital")
    assert mentioned("The Salt Road", "The Salt Road这本书有多少页？")
    assert mentioned("北京", "从北京到上海有多远？") and mentioned("서울", "서울에서 부산까지")
    assert mentioned("กรุงเทพ", "ไปกรุงเทพกี่กิโล") and mentioned("Москва", "Москва, 250 км")
    assert not mentioned("Москва", "Москвабад")
    assert stated_numbers("车辆Dingo跑250公里的行程要用多少升油？") == [250]
    assert stated_numbers("a 250 km trip at 3.5 l and 1,000 more") == [250, 3.5, 1000]
    assert stated_numbers("3,5 litres, 1,000公里") == [3.5, 1000]
    assert stated_numbers("250km, v2, x-") == []
    zh = anchor_to_goal(demo(registry), "公司C和D的发票一共是多少？")
    invoice = next(t for t in zh if t.name == "GetInvoice")
    assert invoice.parameters["properties"]["company"]["enum"] == ["C", "D"]


def test_mentions_numbers_come_from_the_goal_or_constants(registry) -> None:
    from localagent.planners.mentions import CONSTANTS, goal_numbers

    assert goal_numbers("a 250 km trip at 3.5 l and 1,000 more") [:3] == [250, 3.5, 1000]
    assert goal_numbers("no numbers") == list(CONSTANTS)
    planner = TreePlanner(ScriptedLLM([]), demo(registry), PlannerSettings(
        techniques=Techniques.parse("mentions")))
    goal = "What is the invoice of company C plus 250?"
    grammar = planner.constraint(planner.tools_for(goal))
    stated = call("DemoPlugin.Total", value1=call("DemoPlugin.GetInvoice", company="C"),
                  value2=250)
    invented = call("DemoPlugin.Total", value1=call("DemoPlugin.GetInvoice", company="C"),
                    value2=100000000000000)
    assert matches(grammar, compact(stated)) and not matches(grammar, compact(invented))
    padded = call("DemoPlugin.Total", value1=100, value2=call("DemoPlugin.GetInvoice",
                                                                company="C"))
    scaled = call("DemoPlugin.Total", value1=call("DemoPlugin.GetInvoice", company="C"),
                  value2=100)
    assert not matches(grammar, compact(padded))  # a constant the goal does not state...
    assert matches(grammar, compact(scaled))  # ...is admitted second, not first
    # the prompt shows such a number as a number, not as a menu of the admitted values
    manual = render_manual(planner.tools_for(goal))
    assert "value2 (number; required)" in manual and "one of 0" not in manual
    assert 'company (one of "C"; required)' in manual  # a narrowed key keeps its values


def test_react_mentions_keys_come_from_the_goal_or_observations(registry) -> None:
    from localagent.planners.react import ReactPlanner

    planner = ReactPlanner(ScriptedLLM([]), demo(registry),
                           PlannerSettings(techniques=Techniques.parse("mentions")))
    first = planner._step_tools("What is the invoice of company C plus 250?", [])
    step = react_step(first)
    assert matches(step, 'Thought: t\nAction: DemoPlugin.GetInvoice\nAction Input: '
                         '{"company": "C"}')
    assert not matches(step, 'Thought: t\nAction: DemoPlugin.GetInvoice\nAction Input: '
                             '{"company": "A"}')
    assert not matches(step, 'Thought: t\nAction: DemoPlugin.Total\nAction Input: '
                             '{"value1": 20000, "value2": 250}')  # 20000 not seen yet
    later = react_step(planner._step_tools("What is the invoice of company C plus 250?",
                                           [20000]))
    assert matches(later, 'Thought: t\nAction: DemoPlugin.Total\nAction Input: '
                          '{"value1": 20000, "value2": 250}')


def test_tool_calling_mentions_narrow_each_turns_calls_not_the_shown_schemas(registry) -> None:
    """As in ReAct: a call's keys and numbers come from the goal or a result seen so far.
    The model's chat template still gets the declared schemas."""
    from localagent.planners.tool_calling import ToolCallingPlanner

    goal = "What is the invoice of company C plus 250?"
    turn = tc("DemoPlugin.GetInvoice", company="C")
    invented = tc("DemoPlugin.Total", value1=20000, value2=250)
    llm = ScriptedLLM([turn, tc("DemoPlugin.Total", value1=20000, value2=250), "20250"])
    planner = ToolCallingPlanner(llm, demo(registry),
                                 PlannerSettings(techniques=Techniques.parse("mentions")))
    out = planner.run(goal, Executor(registry), max_iterations=4)
    assert out.answer == "20250"
    first, second = (r.constraint for r in llm.requests[:2])
    assert matches(first, turn) and not matches(first, tc("DemoPlugin.GetInvoice", company="A"))
    assert not matches(first, invented)  # 20000 not seen yet
    assert matches(second, invented)  # now it was
    # the declared functions, unnarrowed (company takes A..F there)
    assert all(json.dumps(t) in llm.requests[0].prompt for t in planner.schemas)
    plain = ScriptedLLM([invented, "x"])
    ToolCallingPlanner(plain, demo(registry), PlannerSettings(
        techniques=Techniques.plain())).run(goal, Executor(registry), max_iterations=2)
    assert matches(plain.requests[0].constraint, invented)


def tc(function: str, /, **args: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": function, "arguments": args}) + "\n</tool_call>"


# --- the covering tree grammar (`values`): every stated enum value passed to some call ---

INVOICE_GOAL = ("How much is the difference between the total of company C, F and the total "
                "of company A, E ?")


def inv(company: str) -> dict:
    return call("DemoPlugin.GetInvoice", company=company)


def test_covering_tree_grammar_admits_only_plans_using_every_value(registry) -> None:
    tools = demo(registry)
    right = call("DemoPlugin.Diff", value1=call("DemoPlugin.Total", value1=inv("C"),
                                                value2=inv("F")),
                 value2=call("DemoPlugin.Total", value1=inv("A"), value2=inv("E")))
    anchored = call("DemoPlugin.Diff", value1=inv("C"), value2=inv("F"))  # seen on Qwen
    other_shape = call("DemoPlugin.Total", value1=inv("E"), value2=call(
        "DemoPlugin.Total", value1=inv("A"), value2=call("DemoPlugin.Diff", value1=inv("F"),
                                                          value2=inv("C"))))
    with_repeat = call("DemoPlugin.Diff", value1=call("DemoPlugin.Total", value1=inv("C"),
                                                      value2=inv("C")),
                       value2=call("DemoPlugin.Total", value1=inv("F"), value2=call(
                           "DemoPlugin.Total", value1=inv("A"), value2=inv("E"))))
    covering = tree_plan(tools, cover=["C", "F", "A", "E"])
    plain = tree_plan(tools)
    assert matches(covering, compact(right)) and matches(plain, compact(right))
    assert matches(plain, compact(anchored)) and not matches(covering, compact(anchored))
    assert matches(covering, compact(other_shape))  # coverage, not the structure
    assert matches(covering, compact(with_repeat))  # a value may be used twice
    with pytest.raises(ConstraintError, match="every named value"):  # 2 levels hold 2
        tree_plan(tools, cover=["C", "F", "A", "E"], depth=2)
    # more values than the rules are built for: the usual grammar
    assert tree_plan(tools, cover=["A", "B", "C", "D", "E"]) == plain


def test_covering_tree_grammar_combines_values_listed_together_first(registry) -> None:
    """`groups`: "C, F" and "A, E" are listed together, so a call that first uses values
    of both pairs must hold both pairs whole; the order of the values stays free."""
    tools = demo(registry)

    def diff(a: dict, b: dict) -> dict:
        return call("DemoPlugin.Diff", value1=a, value2=b)

    def total(a: dict, b: dict) -> dict:
        return call("DemoPlugin.Total", value1=a, value2=b)

    right = diff(total(inv("C"), inv("F")), total(inv("A"), inv("E")))
    swapped = diff(total(inv("A"), inv("E")), total(inv("F"), inv("C")))
    all_four = total(total(inv("C"), inv("F")), total(inv("A"), inv("E")))
    chained = diff(inv("C"), total(inv("F"), total(inv("A"), inv("E"))))  # seen on Qwen
    mixed = diff(total(inv("C"), inv("A")), total(inv("F"), inv("E")))
    reused = diff(total(inv("C"), inv("F")), total(inv("C"), total(inv("A"), inv("E"))))
    values = ["C", "F", "A", "E"]
    grouped = tree_plan(tools, cover=values, groups=[0, 0, 1, 1])
    covering = tree_plan(tools, cover=values)
    for plan, admitted in ((right, True), (swapped, True), (all_four, True),
                           (chained, False), (mixed, False), (reused, False)):
        assert matches(grouped, compact(plan)) is admitted, plan
        assert matches(covering, compact(plan)), plan  # ungrouped: every one admitted


def test_compact_writes_the_task_as_the_examples_are_written(registry) -> None:
    goal = "What is the invoice of company C plus the invoice of company F?"
    tools = demo(registry)
    for spec in ("mentions+compact", "mentions"):
        planner = TreePlanner(ScriptedLLM([]), tools, PlannerSettings(
            techniques=Techniques.parse(spec)))
        user = planner.messages(goal, planner.tools_for(goal))[-1]["content"]
        task = user.split("Now the real task.")[1]
        compact = "compact" in spec
        assert task.count("Functions: ") == (1 if compact else 0), task
        assert ("[AVAILABLE FUNCTIONS]" in task) is not compact
        if compact:  # the narrowed company shown, the numbers by their type
            assert 'DemoPlugin.GetInvoice(company: "C" | "F") -> integer' in task, task
            assert "DemoPlugin.Total(value1: number, value2: number) -> number" in task, task


# --- values: the enum values the goal states ---------------------------------------------

INVOICE_GOALS = (INVOICE_GOAL, *INVOICE_TRANSLATED)  # the Chinese list: ideographic commas


def test_stated_enum_values_and_mark_groups_read_no_words() -> None:
    """`values` finds the enum values the goal writes and groups those listed with marks
    only; replacing every other letter of the goal changes nothing (no words read)."""
    from localagent.planners.coverage import listed_groups, stated_enum_values

    tools = demo(default_registry(examples=True))
    for goal in INVOICE_GOALS:
        values = stated_enum_values(goal, tools)
        assert values == ["C", "F", "A", "E"], goal
        assert listed_groups(goal, values) == [0, 0, 1, 1], goal
        scrambled = "".join("x" if ch.isalpha() and ch not in "CFAE" else ch for ch in goal)
        assert stated_enum_values(scrambled, tools) == values
        assert listed_groups(scrambled, values) == [0, 0, 1, 1]
    # words between values separate them: a list needs marks alone
    assert listed_groups("the invoices of A and C", ["A", "C"]) == [0, 1]
    assert listed_groups("A/B & C + D", ["A", "B", "C", "D"]) == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="not named"):
        listed_groups("the invoice of A", ["B"])
    # a one-letter value counts only in its own case and as a whole token
    assert stated_enum_values("a total of Cats and a Fee", tools) == []


def test_values_tree_planner_admits_only_the_grouped_covering_plans(registry) -> None:
    """With `values` the tree grammar must pass C, F, A and E and combine "C, F" and
    "A, E" first, whatever the language the goal is written in."""
    right = compact(call("DemoPlugin.Diff",
                         value1=call("DemoPlugin.Total", value1=inv("C"), value2=inv("F")),
                         value2=call("DemoPlugin.Total", value1=inv("A"), value2=inv("E"))))
    anchored = compact(call("DemoPlugin.Diff", value1=inv("C"), value2=inv("F")))  # seen
    mixed = compact(call("DemoPlugin.Diff",  # seen on a sampled seed
                         value1=call("DemoPlugin.Total", value1=inv("C"), value2=inv("E")),
                         value2=call("DemoPlugin.Total", value1=inv("F"), value2=inv("A"))))
    for goal in INVOICE_GOALS:
        planner = TreePlanner(ScriptedLLM([]), demo(registry), PlannerSettings(
            techniques=Techniques.parse("mentions+values")))
        grammar = planner.constraint(planner.tools_for(goal), goal)
        assert matches(grammar, right), goal
        assert not matches(grammar, anchored) and not matches(grammar, mixed), goal
    plain = TreePlanner(ScriptedLLM([]), demo(registry), PlannerSettings(
        techniques=Techniques.parse("mentions")))
    assert matches(plain.constraint(plain.tools_for(INVOICE_GOAL), INVOICE_GOAL), anchored)
    shallow = TreePlanner(ScriptedLLM([]), demo(registry), PlannerSettings(
        techniques=Techniques.parse("values")), depth=2)
    assert shallow.constraint(None, INVOICE_GOAL) == shallow.constraint()  # cannot cover


class Shop:
    """A price lookup whose second item fails: an execution error, not a parse error."""

    @tool(name="Price")
    def price(self, item: Literal["pear", "fig"]) -> float:
        """The price of an item."""
        if item == "fig":
            raise LookupError("no figs today")
        return 2.5


def test_a_failed_values_plan_is_followed_by_one_plan_without_values() -> None:
    """Stated values may be alternatives ("pear; otherwise fig") that no plan needs all
    of; when the plan made under `values` fails to execute, one more plan comes from the
    plain grammar (same prompt), and only then."""
    from localagent.tools.registry import ToolRegistry

    shop = ToolRegistry()
    shop.add_plugin(Shop())
    goal = "The price of pear; otherwise of fig"
    bad = compact(call("Shop.Price", item="fig"))
    good = compact(call("Shop.Price", item="pear"))
    runs = {}
    for spec in ("mentions+values", "mentions"):
        llm = ScriptedLLM([bad, good])
        planner = TreePlanner(llm, shop.specs(),
                              PlannerSettings(techniques=Techniques.parse(spec)))
        runs[spec] = (plan_and_execute(planner, goal, lambda: Executor(shop), GenerationLog()),
                      llm)
    run, llm = runs["mentions+values"]
    assert [a.ok for a in run.attempts] == [False, True]
    assert run.chosen is not None and run.chosen.result.value == 2.5
    first, second = llm.requests
    assert first.prompt == second.prompt  # the same prompt: cached
    relaxed = TreePlanner(llm, shop.specs(), PlannerSettings(
        techniques=Techniques.parse("mentions+values"))).relaxed()
    assert relaxed is not None and relaxed.techniques == Techniques.parse("mentions")
    run, llm = runs["mentions"]  # without values the failure is the outcome
    assert [a.ok for a in run.attempts] == [False] and run.chosen is None
    assert len(llm.requests) == 1


def test_values_tool_calling_passes_every_stated_company_before_answering(registry) -> None:
    """`values` in a loop: the enum values the goal writes (any language) must each reach
    a call before the loop may answer; no proper names, no free-text exemption."""
    from localagent.planners.tool_calling import ToolCallingPlanner

    def tc(name: str, **args: object) -> str:
        return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"

    goal = "Wie hoch ist die Summe der Rechnungen von Firma C und Firma F?"
    llm = ScriptedLLM([tc("DemoPlugin.GetInvoice", company="C"),
                       tc("DemoPlugin.GetInvoice", company="F"), "24100"])
    planner = ToolCallingPlanner(llm, demo(registry), PlannerSettings(
        techniques=Techniques.parse("values")))
    out = planner.run(goal, Executor(registry), max_iterations=4)
    assert out.answer == "24100"
    second, third = llm.requests[1].constraint, llm.requests[2].constraint
    assert not matches(second, "20000")  # F not passed yet: no answer
    assert matches(second, tc("DemoPlugin.GetInvoice", company="F"))
    assert matches(third, "24100")
    # no words read: a goal asking for text is not exempt
    from localagent.planners.coverage import Coverage

    note = "Write a note on the invoices of company C and company F"
    assert Coverage.of(note, demo(registry), True).named == ["C", "F"]
    assert Coverage.of(note, demo(registry), False).named == []
