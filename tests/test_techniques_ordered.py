"""The `ordered` technique (sequential, with backrefs): one call's step references are
distinct and ascending. The plans are the ones the default model wrote on the
generalisation suite (docs/BENCHMARKS.md, stop 17)."""

from __future__ import annotations

import pytest
from suite_grammar import admits_steps, call

DEFAULT = "mentions+answer+head+named+backrefs"
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
    assert admits_steps(DEFAULT, goal, steps, start)
    assert not admits_steps(DEFAULT + "+ordered", goal, steps, start)


def test_ordered_admits_references_in_goal_order_and_literals() -> None:
    spec = DEFAULT + "+ordered"
    right = [*LOOKUPS, call("MathPlugin.subtract", value1="$1", value2="$2")]
    assert admits_steps(spec, PAGES, right, "Ashes of Meridian")
    # a literal beside a reference, and a reference to a step that is not the last one
    assert admits_steps(spec, DEV, [call("Staff.GetSalary", name="Dev"), call(
        "MathPlugin.divide", value1="$1", value2=12)], "Dev")
    three = [*LOOKUPS, call("BookLibrary.GetPages", title="Ashes of Meridian"),
             call("MathPlugin.subtract", value1="$1", value2="$3")]
    assert admits_steps(spec, PAGES, three, "Ashes of Meridian")
