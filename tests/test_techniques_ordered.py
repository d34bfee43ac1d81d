"""The `ordered` technique (sequential, with backrefs): one call's step references are
distinct and ascending. The plans are the ones the default model wrote on the
generalisation suite (docs/BENCHMARKS.md, stop 17)."""

from __future__ import annotations

import pytest
from suite_grammar import admits_steps, call

BASE = "mentions+backrefs"
PAGES = "How many more pages does Ashes of Meridian have than The Copper Orchard?"
LOOKUPS = [call("BookLibrary.GetPages", title="Ashes of Meridian"),
           call("BookLibrary.GetPages", title="The Copper Orchard")]
DEV = "What is Dev's salary per month, if the yearly salary is paid in 12 equal parts?"


@pytest.mark.parametrize(("goal", "steps", "start"), [
    (PAGES, [*LOOKUPS, call("MathPlugin.subtract", value1="$2", value2="$1")],
     "Ashes of Meridian"),
    (DEV, [call("Staff.GetSalary", name="Dev"), call("MathPlugin.divide", value1="$1",
                                                     value2="$1")], "Dev"),
])
def test_ordered_rejects_the_plans_seen_on_the_model(goal: str, steps: list[dict],
                                                     start: str) -> None:
    assert admits_steps(BASE, goal, steps, start)
    assert not admits_steps(BASE + "+ordered", goal, steps, start)
    assert not admits_steps(BASE + "+typed+ordered", goal, steps, start)


def test_ordered_admits_references_in_goal_order_and_literals() -> None:
    spec = BASE + "+ordered"
    right = [*LOOKUPS, call("MathPlugin.subtract", value1="$1", value2="$2")]
    assert admits_steps(spec, PAGES, right, "Ashes of Meridian")
    # a literal beside a reference, and a reference to a step that is not the last one
    assert admits_steps(spec, DEV, [call("Staff.GetSalary", name="Dev"), call(
        "MathPlugin.divide", value1="$1", value2=12)], "Dev")
    three = [*LOOKUPS, call("BookLibrary.GetPages", title="Ashes of Meridian"),
             call("MathPlugin.subtract", value1="$1", value2="$3")]
    assert admits_steps(spec, PAGES, three, "Ashes of Meridian")


def test_distinct_rejects_a_repeated_reference_and_keeps_any_order() -> None:
    """`distinct`: no `divide($1, $1)` (Dev's salary per month = 1); `add($2, $1)` stays,
    which `ordered` turned into `add($2, 1)` (the moons of Uranus and Neptune)."""
    spec = BASE + "+distinct"
    same = [call("Staff.GetSalary", name="Dev"),
            call("MathPlugin.divide", value1="$1", value2="$1")]
    assert not admits_steps(spec, DEV, same, "Dev")
    assert admits_steps(spec, DEV, [same[0], call("MathPlugin.divide", value1="$1",
                                                  value2=12)], "Dev")
    moons = "How many moons do Uranus and Neptune have together?"
    lookups = [call("Planets.GetMoons", planet="Uranus"),
               call("Planets.GetMoons", planet="Neptune")]
    swapped = [*lookups, call("MathPlugin.add", value1="$2", value2="$1")]
    assert admits_steps(spec, moons, swapped, "Uranus")
    assert not admits_steps(BASE + "+ordered", moons, swapped, "Uranus")
    for typed in ("+typed", "+typed+ordered"):  # the same through the typed step list
        assert not admits_steps(spec + typed, DEV, same, "Dev")
