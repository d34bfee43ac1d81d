"""The `head` technique (planners/head.py): the plan ends in what the question's head asks.

Fast tests: the suite's own tools, no model. The real-model test is in
tests/test_techniques_real.py; that the grammar admits every reference plan of the
generalisation suite is checked in tests/test_generalisation_suite.py.
"""

from __future__ import annotations

import pytest
from suite_grammar import SUITE, TOOLS, admits, call

from localagent.bench.tools import build_registry
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import PlannerSettings
from localagent.planners.head import asked_operation, head_noun, head_roots, narrow_roots
from localagent.planners.techniques import Techniques


@pytest.mark.parametrize(("goal", "operation"), [
    ("How many more pages does Ashes of Meridian have than The Copper Orchard?",
     "difference"),
    ("How much more does Ingrid earn per year than Leena?", "difference"),  # earliest cue
    ("How many points are the Falcons ahead of the Wolves?", "difference"),
    ("How many times larger is the diameter of Jupiter than the diameter of Earth?",
     "ratio"),
    ("How many goals per win have the Lynx scored?", "ratio"),
    ("How many moons do Uranus and Neptune have together?", "sum"),
    ("What is 17 multiplied by 23?", "product"),
    ("Which team has more points, the Wolves or the Otters?", None),  # no "than"
    ("Who wrote 'The total sum'?", None),  # quoted text is content, not a cue
])
def test_asked_operation_reads_the_earliest_cue(goal: str, operation: str | None) -> None:
    assert asked_operation(goal) == operation


@pytest.mark.parametrize(("goal", "noun"), [
    ("What is the capital of Kenya?", ["capital"]),
    ("What is Leena's yearly salary?", ["yearly", "salary"]),
    ("What department does Ingrid's manager work in?", ["department"]),
    ("In which department does the driver of the vehicle Atlas work?", ["department"]),
    ("How many goals has the team with more points scored, the Herons or the Lynx?",
     ["goals"]),
    ("List all the library's books by the author of The Quiet Engine.", ["books"]),
    ("Who wrote the book Glass Harbour?", []),  # the head is a verb
    ("Who manages the driver of the vehicle Condor?", []),
])
def test_head_noun_is_the_phrase_after_the_question_word(goal: str, noun: list[str]) -> None:
    assert head_noun(goal) == noun


def _short(names: list[str] | None) -> list[str] | None:
    return None if names is None else sorted(n.split(".")[-1] for n in names)


def test_head_roots_name_the_functions_of_the_head() -> None:
    assert _short(head_roots("What is the capital of Kenya?", TOOLS)) == ["GetCapital"]
    assert _short(head_roots("What department does Ingrid's manager work in?", TOOLS)) == [
        "GetDepartment"]
    assert _short(head_roots("How many goals per win have the Lynx scored?", TOOLS)) == [
        "divide"]
    # a singular noun asks for one value, a plural one for a list
    atlas = "In which department does the driver of the vehicle Atlas work?"
    assert _short(head_roots(atlas, TOOLS)) == ["GetDepartment"]
    assert _short(head_roots("Which books by Mira Okafor does the library have?", TOOLS)) == [
        "ListBooksBy"]
    assert _short(head_roots("How many books by Sofia Lindqvist are in the library?",
                             TOOLS)) == ["CountBooksBy", "ListBooksBy"]  # answer: a number
    assert head_roots("How many matches has the team with more points won?", TOOLS) is None
    # what shares Yuki's department: a function taking a department
    assert _short(head_roots("Who works in the same department as Yuki?", TOOLS)) == [
        "ListDepartment"]
    assert head_roots("Who wrote the book Glass Harbour?", TOOLS) is None  # no GetWriter
    # a "who" question headed by a verb asks for who does it
    assert _short(head_roots("Who manages the driver of the vehicle Condor?", TOOLS)) == [
        "GetManager"]
    assert _short(head_roots("Who drives the vehicle Bison?", TOOLS)) == ["GetDriver"]


def test_narrow_roots_keeps_the_answer_kind_when_nothing_is_left() -> None:
    assert narrow_roots(["a", "b"], ["b", "c"]) == ["b"]
    assert narrow_roots(["a"], ["c"]) == ["a"]
    assert narrow_roots(None, ["c"]) == ["c"]
    assert narrow_roots(["a"], None) == ["a"]


@pytest.mark.parametrize(("goal", "wrong", "right"), [
    # plans the default model wrote on the generalisation suite (stop 15)
    ("What department does Ingrid's manager work in?",
     call("Staff.GetManager", name="Ingrid"),
     call("Staff.GetDepartment", name=call("Staff.GetManager", name="Ingrid"))),
    ("What is the capital of Kenya?",
     call("Countries.CountryOfCapital", capital=call("Countries.GetCapital",
                                                       country="Kenya")),
     call("Countries.GetCapital", country="Kenya")),
    ("How many goals per win have the Lynx scored?",
     call("League.GetGoals", team="Lynx"),
     call("MathPlugin.divide", value1=call("League.GetGoals", team="Lynx"),
           value2=call("League.GetWins", team="Lynx"))),
    # the sequential, ReAct and tool-calling plans of stop 17 stopped at the driver
    ("Who manages the driver of the vehicle Condor?",
     call("Fleet.GetDriver", vehicle="Condor"),
     call("Staff.GetManager", name=call("Fleet.GetDriver", vehicle="Condor"))),
])
def test_the_head_grammar_rejects_plans_seen_on_the_model(goal: str, wrong: dict,
                                                          right: dict) -> None:
    base = "mentions+together+answer+backrefs"
    assert admits(base, goal, wrong) and admits(base, goal, right)
    assert not admits(base + "+head", goal, wrong)
    assert admits(base + "+head", goal, right)


def test_react_may_not_answer_before_calling_the_asked_operation() -> None:
    """"How many more pages ...?": in ReAct and tool calling, `head` holds the answer back
    until a function of the asked operation (subtract) was called."""
    from localagent.executor import Executor
    from localagent.planners.react import ReactPlanner

    task = next(t for t in SUITE.tasks if t.id == "arithmetic-pages-longer")
    registry = build_registry(task)
    ashes = ('Thought: t\nAction: BookLibrary.GetPages\n'
             'Action Input: {"title": "Ashes of Meridian"}')
    copper = ('Thought: t\nAction: BookLibrary.GetPages\n'
              'Action Input: {"title": "The Copper Orchard"}')
    early = "Thought: t\nFinal Answer: 430"
    subtract = ('Thought: t\nAction: MathPlugin.subtract\n'
                'Action Input: {"value1": 430, "value2": 189}')
    for spec in ("mentions+head", "mentions+cover+head"):
        llm = ScriptedLLM([ashes, copper, subtract, "Thought: t\nFinal Answer: 241"])
        out = ReactPlanner(llm, registry.specs(), PlannerSettings(
            techniques=Techniques.parse(spec))).run(task.goal, Executor(registry))
        assert str(out.answer) == "241", spec
        second, third = llm.requests[1].constraint, llm.requests[2].constraint
        assert matches(second, copper) and not matches(second, early), spec
        assert not matches(third, early) and matches(third, subtract), spec
        assert matches(llm.requests[3].constraint, "Thought: t\nFinal Answer: 241"), spec
    # with `cover`, once both books were looked up, the subtraction is the only next step
    assert not matches(third, ashes)
    off = ScriptedLLM([ashes, copper, early])
    ReactPlanner(off, registry.specs(), PlannerSettings(
        techniques=Techniques.parse("mentions"))).run(task.goal, Executor(registry))
    assert matches(off.requests[2].constraint, early)
