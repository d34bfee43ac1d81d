"""The `nouns` and `numbers` techniques (planners/nouns.py; grammar/covering.py `needs`,
`numbers`): the functions a goal names as "X's N", "the N of X" or "per N" are called, and
the numbers it states are used. Fast tests, no model."""

from __future__ import annotations

import pytest
from suite_grammar import TOOLS, admits, call

from localagent.planners.nouns import needed_functions

INGRID = "What department does Ingrid's manager work in?"
LYNX = "How many goals per win have the Lynx scored?"


def _short(needs: list[list[str]]) -> list[list[str]]:
    return [[n.split(".")[-1] for n in names] for names in needs]


@pytest.mark.parametrize(("goal", "needs"), [
    (INGRID, [["GetManager"]]),
    (LYNX, [["GetWins"]]),
    ("In which department does the driver of the vehicle Atlas work?", [["GetDriver"]]),
    ("List all the library's books by the author of The Quiet Engine.",
     [["CountBooksBy", "ListBooksBy"], ["GetAuthor"]]),  # any one of a noun's functions
    ("What is the population, in millions, of the country whose capital is Hanoi?", []),
    ("What's the salary of Dev?", [["GetSalary"]]),  # "what's" is no possessive
    ("What is Dev's salary per month?", [["GetSalary"]]),  # "month" names nothing
    ("How many goals has the team with more points scored, the Herons or the Lynx?",
     [["TopTeam"]]),
])
def test_needed_functions_come_from_possessives_of_phrases_and_per(
        goal: str, needs: list[list[str]]) -> None:
    assert _short(needed_functions(goal, TOOLS)) == needs


@pytest.mark.parametrize(("goal", "wrong", "right"), [
    # plans the default model wrote with `head` (this stop)
    (INGRID, call("Staff.GetDepartment", name="Ingrid"),
     call("Staff.GetDepartment", name=call("Staff.GetManager", name="Ingrid"))),
    (LYNX, call("MathPlugin.divide", value1=call("League.GetGoals", team="Lynx"),
                 value2=call("League.GetPoints", team="Lynx")),
     call("MathPlugin.divide", value1=call("League.GetGoals", team="Lynx"),
           value2=call("League.GetWins", team="Lynx"))),
])
def test_the_nouns_grammar_rejects_plans_that_skip_a_named_function(
        goal: str, wrong: dict, right: dict) -> None:
    base = "mentions+together+answer+backrefs+head"
    assert admits(base, goal, wrong) and admits(base, goal, right)
    assert not admits(base + "+nouns", goal, wrong)
    assert admits(base + "+nouns", goal, right)
    assert not admits("mentions+nouns", goal, wrong)  # without named values to cover


def test_numbers_every_stated_number_is_passed_to_acall() -> None:
    """`divide(GetSalary(Dev), GetSalary(Dev))`: the default model with `shallow`."""
    goal = "What is Dev's salary per month, if the yearly salary is paid in 12 equal parts?"
    salary = call("Staff.GetSalary", name="Dev")
    wrong = call("MathPlugin.divide", value1=salary, value2=salary)
    right = call("MathPlugin.divide", value1=salary, value2=12)
    for base in ("mentions+together+answer+head", "mentions"):  # with named values or not
        assert admits(base, goal, wrong) and admits(base, goal, right), base
        assert not admits(base + "+numbers", goal, wrong), base
        assert admits(base + "+numbers", goal, right), base


def test_shallow_numbers_keep_a_stated_number_out_of_a_repeated_lookup() -> None:
    """`divide(GetSalary(Dev), multiply(GetSalary(Dev), 12))`: the default model with
    `shallow+numbers` before this rule."""
    goal = "What is Dev's salary per month, if the yearly salary is paid in 12 equal parts?"
    salary = call("Staff.GetSalary", name="Dev")
    wrong = call("MathPlugin.divide", value1=salary,
                  value2=call("MathPlugin.multiply", value1=salary, value2=12))
    right = call("MathPlugin.divide", value1=salary, value2=12)
    spec = "mentions+together+answer+head+numbers"
    assert admits(spec, goal, wrong) and admits(spec, goal, right)
    assert not admits(spec + "+shallow", goal, wrong)
    assert admits(spec + "+shallow", goal, right)
