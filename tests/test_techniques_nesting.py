"""The `once` and `shallow` techniques (planners/nesting.py): no lookup applied to its own
result unless the goal names it twice; arithmetic only in a plan's outer two levels. Fast
tests over the generalisation suite's tools, no model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localagent.bench.suite import load_suite
from localagent.bench.tools import build_registry
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import PlannerSettings
from localagent.planners.nesting import no_self_nesting, unnamed_self_maps
from localagent.planners.techniques import Techniques
from localagent.planners.tree import TreePlanner

SUITE = load_suite(Path(__file__).resolve().parents[1] / "benchmarks" / "suites"
                   / "generalisation.yaml")
TOOLS = build_registry(SUITE.tasks[0]).specs()
CONDOR = "Who manages the driver of the vehicle Condor?"
LEENA = "Who is the manager of Leena's manager?"


def _call(function: str, **args: Any) -> dict:
    return {"function": function, "args": args}


def _admits(spec: str, goal: str, plan: dict) -> bool:
    planner = TreePlanner(ScriptedLLM([]), TOOLS,
                          PlannerSettings(techniques=Techniques.parse(spec)))
    grammar = planner.constraint(planner.tools_for(goal), goal)
    return matches(grammar, json.dumps(plan, separators=(", ", ": ")))


def test_a_lookup_named_twice_may_nest_itself_a_combiner_always() -> None:
    assert "Staff.GetManager" in no_self_nesting(CONDOR, TOOLS)
    assert "Staff.GetManager" not in no_self_nesting(LEENA, TOOLS)
    held = no_self_nesting(CONDOR, TOOLS)
    assert "League.TopTeam" not in held and "MathPlugin.add" not in held  # two arguments


def test_the_grammar_rejects_the_repeated_manager_seen_on_the_model() -> None:
    """`GetManager(GetManager(GetDriver(Condor)))`: the default model's plan, stop 15."""
    driver = _call("Fleet.GetDriver", vehicle="Condor")
    right = _call("Staff.GetManager", name=driver)
    wrong = _call("Staff.GetManager", name=right)
    base = "mentions+together+answer+backrefs"
    assert _admits(base, CONDOR, wrong) and _admits(base, CONDOR, right)
    assert not _admits(base + "+once", CONDOR, wrong)  # the covering grammar
    assert not _admits("mentions+once", CONDOR, wrong)  # the plain tree grammar
    assert _admits(base + "+once", CONDOR, right)
    twice = _call("Staff.GetManager", name=_call("Staff.GetManager", name="Leena"))
    assert _admits(base + "+once", LEENA, twice)


def test_a_combiner_may_take_its_own_result_under_once() -> None:
    goal = "Which team has the most points: the Wolves, the Otters or the Lynx?"
    best = _call("League.TopTeam", team_a=_call("League.TopTeam", team_a="Wolves",
                                                team_b="Otters"), team_b="Lynx")
    assert _admits("mentions+answer+once", goal, best)


def test_an_unnamed_person_to_person_lookup_is_not_offered() -> None:
    """`GetSalary(GetManager(GetManager(GetDriver(Ember))))`: the default model, stop 15."""
    ember = "What is the yearly salary of the person who drives the vehicle Ember?"
    assert unnamed_self_maps(ember, TOOLS) == ["Staff.GetManager"]
    assert unnamed_self_maps(CONDOR, TOOLS) == []  # "manages" names it
    driver = _call("Fleet.GetDriver", vehicle="Ember")
    wrong = _call("Staff.GetSalary", name=_call("Staff.GetManager", name=driver))
    right = _call("Staff.GetSalary", name=driver)
    assert _admits("mentions+together+answer", ember, wrong)
    assert not _admits("mentions+together+answer+once", ember, wrong)
    assert _admits("mentions+together+answer+once", ember, right)


def test_shallow_keeps_arithmetic_in_the_outer_two_levels_with_a_call() -> None:
    """The default model's plan for Dev's monthly salary (stop 15, with `head`)."""
    goal = "What is Dev's salary per month, if the yearly salary is paid in 12 equal parts?"
    salary = _call("Staff.GetSalary", name="Dev")
    hundreds = _call("MathPlugin.multiply", value1=12, value2=100)
    wrong = _call("MathPlugin.divide", value1=salary, value2=hundreds)
    deep = _call("MathPlugin.divide", value1=salary, value2=_call(
        "MathPlugin.multiply", value1=_call("MathPlugin.divide", value1=hundreds,
                                            value2=hundreds), value2=12))
    right = _call("MathPlugin.divide", value1=salary, value2=12)
    for base in ("mentions+together+answer+head", "mentions"):  # covering and plain
        assert _admits(base, goal, wrong) and _admits(base, goal, deep), base
        assert not _admits(base + "+shallow", goal, wrong), base
        assert not _admits(base + "+shallow", goal, deep), base
        assert _admits(base + "+shallow", goal, right), base
    twelfth = _call("MathPlugin.divide", value1=12, value2=_call(
        "MathPlugin.divide", value1=12, value2=salary))  # a call as the second argument
    assert _admits("mentions+shallow", goal, twelfth)
