"""The `once` and `shallow` techniques (planners/nesting.py): no lookup applied to its own
result unless the goal names it twice; arithmetic only in a plan's outer two levels. Fast
tests over the generalisation suite's tools, no model."""

from __future__ import annotations

from suite_grammar import TOOLS, admits, call

from localagent.planners.nesting import no_self_nesting, unnamed_self_maps

CONDOR = "Who manages the driver of the vehicle Condor?"
LEENA = "Who is the manager of Leena's manager?"


def test_a_lookup_named_twice_may_nest_itself_a_combiner_always() -> None:
    assert "Staff.GetManager" in no_self_nesting(CONDOR, TOOLS)
    assert "Staff.GetManager" not in no_self_nesting(LEENA, TOOLS)
    held = no_self_nesting(CONDOR, TOOLS)
    assert "League.TopTeam" not in held and "MathPlugin.add" not in held  # two arguments


def test_the_grammar_rejects_the_repeated_manager_seen_on_the_model() -> None:
    """`GetManager(GetManager(GetDriver(Condor)))`: the default model's plan, stop 15."""
    driver = call("Fleet.GetDriver", vehicle="Condor")
    right = call("Staff.GetManager", name=driver)
    wrong = call("Staff.GetManager", name=right)
    base = "mentions+together+answer+backrefs"
    assert admits(base, CONDOR, wrong) and admits(base, CONDOR, right)
    assert not admits(base + "+once", CONDOR, wrong)  # the covering grammar
    assert not admits("mentions+once", CONDOR, wrong)  # the plain tree grammar
    assert admits(base + "+once", CONDOR, right)
    twice = call("Staff.GetManager", name=call("Staff.GetManager", name="Leena"))
    assert admits(base + "+once", LEENA, twice)


def test_a_combiner_may_take_its_own_result_under_once() -> None:
    goal = "Which team has the most points: the Wolves, the Otters or the Lynx?"
    best = call("League.TopTeam", team_a=call("League.TopTeam", team_a="Wolves",
                                                team_b="Otters"), team_b="Lynx")
    assert admits("mentions+answer+once", goal, best)


def test_an_unnamed_person_to_person_lookup_is_not_offered() -> None:
    """`GetSalary(GetManager(GetManager(GetDriver(Ember))))`: the default model, stop 15."""
    ember = "What is the yearly salary of the person who drives the vehicle Ember?"
    assert unnamed_self_maps(ember, TOOLS) == ["Staff.GetManager"]
    assert unnamed_self_maps(CONDOR, TOOLS) == []  # "manages" names it
    driver = call("Fleet.GetDriver", vehicle="Ember")
    wrong = call("Staff.GetSalary", name=call("Staff.GetManager", name=driver))
    right = call("Staff.GetSalary", name=driver)
    assert admits("mentions+together+answer", ember, wrong)
    assert not admits("mentions+together+answer+once", ember, wrong)
    assert admits("mentions+together+answer+once", ember, right)


def test_shallow_keeps_arithmetic_in_the_outer_two_levels_with_acall() -> None:
    """The default model's plan for Dev's monthly salary (stop 15, with `head`)."""
    goal = "What is Dev's salary per month, if the yearly salary is paid in 12 equal parts?"
    salary = call("Staff.GetSalary", name="Dev")
    hundreds = call("MathPlugin.multiply", value1=12, value2=100)
    wrong = call("MathPlugin.divide", value1=salary, value2=hundreds)
    deep = call("MathPlugin.divide", value1=salary, value2=call(
        "MathPlugin.multiply", value1=call("MathPlugin.divide", value1=hundreds,
                                            value2=hundreds), value2=12))
    right = call("MathPlugin.divide", value1=salary, value2=12)
    for base in ("mentions+together+answer+head", "mentions"):  # covering and plain
        assert admits(base, goal, wrong) and admits(base, goal, deep), base
        assert not admits(base + "+shallow", goal, wrong), base
        assert not admits(base + "+shallow", goal, deep), base
        assert admits(base + "+shallow", goal, right), base
    twelfth = call("MathPlugin.divide", value1=12, value2=call(
        "MathPlugin.divide", value1=12, value2=salary))  # a call as the second argument
    assert admits("mentions+shallow", goal, twelfth)
