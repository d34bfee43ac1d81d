"""The `typed` technique (sequential, with backrefs): a `$k` stands only where step k's
result fits the argument. The plans are the ones the default model wrote on the
generalisation suite (docs/BENCHMARKS.md, stop 18)."""

from __future__ import annotations

import pytest
from suite_grammar import TOOLS, admits_steps, call

from localagent.grammar.jsonlark import Bounds
from localagent.grammar.typed_steps import (
    MAX_CALL_RULES,
    ReturnClasses,
    state_count,
    tracked_steps,
)

BASE = "mentions+backrefs"
TYPED = BASE + "+typed"
EMBER = "What is the yearly salary of the person who drives the vehicle Ember?"
DINGO = "Who works in the same department as the driver of the vehicle Dingo?"


def _ember(salary_of: str) -> list[dict]:
    """The plan seen on the model: three lookups, arithmetic, then GetSalary."""
    return [call("Fleet.GetConsumption", vehicle="Ember"), call("Fleet.GetDriver", vehicle="Ember"),
            call("Fleet.GetMileage", vehicle="Ember"),
            call("MathPlugin.multiply", value1="$1", value2="$3"),
            call("MathPlugin.subtract", value1="$1", value2="$4"),
            call("Staff.GetSalary", name=salary_of)]


def test_typed_rejects_a_number_where_a_name_belongs() -> None:
    """Seen: GetSalary($1) after GetConsumption(Ember) = 8.5, and GetDepartment of a
    consumption (Dingo)."""
    assert admits_steps(BASE, EMBER, _ember("$1"), "Ember")
    assert not admits_steps(TYPED, EMBER, _ember("$1"), "Ember")
    dingo = [call("Fleet.GetConsumption", vehicle="Dingo"),
             call("Staff.GetDepartment", name="$1"),
             call("Staff.ListDepartment", department="$2")]
    assert admits_steps(BASE, DINGO, dingo, "Dingo")
    assert not admits_steps(TYPED, DINGO, dingo, "Dingo")


def test_typed_rejects_a_name_in_arithmetic() -> None:
    """Seen: multiply($2, $3) with $2 = GetDriver(Ember), a person."""
    steps = _ember("$2")
    steps[3] = call("MathPlugin.multiply", value1="$2", value2="$3")
    assert admits_steps(BASE, EMBER, steps, "Ember")
    assert not admits_steps(TYPED, EMBER, steps, "Ember")


@pytest.mark.parametrize("spec", [TYPED, TYPED + "+ordered"])
def test_typed_admits_the_plans_the_model_wrote_with_it(spec: str) -> None:
    assert admits_steps(spec, EMBER, _ember("$2"), "Ember")
    dingo = [call("Fleet.GetConsumption", vehicle="Dingo"), call("Fleet.GetDriver", vehicle="Dingo"),
             call("Staff.GetDepartment", name="$2"),
             call("Staff.ListDepartment", department="$3")]
    assert admits_steps(spec, DINGO, dingo, "Dingo")


def test_return_classes_group_tools_by_the_arguments_their_results_fit() -> None:
    classes = ReturnClasses(TOOLS, Bounds())
    of = {t.name: classes.of_tool[i] for i, t in enumerate(TOOLS)}
    assert of["GetDriver"] == of["GetManager"]  # both return a person
    assert of["GetPages"] == of["add"] == of["GetSalary"]  # numbers
    assert of["GetDriver"] != of["GetPages"] != of["GetCapital"]
    assert of["ListBooksBy"] == of["ListDepartment"]  # a list fits no argument here


@pytest.mark.parametrize(("classes", "slots"), [(2, 14), (5, 14), (9, 34), (2, 4286)])
def test_tracked_steps_keep_the_call_rules_under_the_bound(classes: int, slots: int) -> None:
    tracked = tracked_steps(classes, 6, slots)
    assert tracked == 0 or slots * state_count(classes, tracked, 6) <= MAX_CALL_RULES
    assert tracked == 5 or slots * state_count(classes, tracked + 1, 6) > MAX_CALL_RULES


def test_the_suite_tracks_four_steps_of_five_classes() -> None:
    """What the module docstring promises for the generalisation suite's sizes."""
    assert tracked_steps(5, 6, 14) == 4
    assert tracked_steps(9, 6, 34) == 2
    assert tracked_steps(2, 6, 4286) == 0
