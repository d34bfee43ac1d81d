"""The `shallow` technique (planners/nesting.py): arithmetic only in a plan's outer two
levels. Fast tests over the generalisation suite's tools, no model."""

from __future__ import annotations

from suite_grammar import admits, call


def test_shallow_keeps_arithmetic_in_the_outer_two_levels_with_acall() -> None:
    """The default model's plan for Dev's monthly salary (stop 15)."""
    goal = "What is Dev's salary per month, if the yearly salary is paid in 12 equal parts?"
    salary = call("Staff.GetSalary", name="Dev")
    hundreds = call("MathPlugin.multiply", value1=12, value2=100)
    wrong = call("MathPlugin.divide", value1=salary, value2=hundreds)
    deep = call("MathPlugin.divide", value1=salary, value2=call(
        "MathPlugin.multiply", value1=call("MathPlugin.divide", value1=hundreds,
                                            value2=hundreds), value2=12))
    right = call("MathPlugin.divide", value1=salary, value2=12)
    for base in ("mentions+values", "mentions"):  # covering and plain
        assert admits(base, goal, wrong) and admits(base, goal, deep), base
        assert not admits(base + "+shallow", goal, wrong), base
        assert not admits(base + "+shallow", goal, deep), base
        assert admits(base + "+shallow", goal, right), base
    twelfth = call("MathPlugin.divide", value1=12, value2=call(
        "MathPlugin.divide", value1=12, value2=salary))  # a call as the second argument
    assert admits("mentions+shallow", goal, twelfth)
