"""MathPlugin: arithmetic on numbers, and a Calculator for whole expressions."""

from __future__ import annotations

import math
from typing import Annotated

from localagent.tools.calculator import calculate, power_bounded, tidy
from localagent.tools.decorator import tool

First = Annotated[float, "The first number."]
Second = Annotated[float, "The second number."]


class MathPlugin:
    """Basic arithmetic. Results that are whole numbers come back as integers."""

    @tool
    def add(self, value1: First, value2: Second) -> float:
        """Add two numbers: value1 + value2."""
        return tidy(value1 + value2)

    @tool
    def subtract(self, value1: First, value2: Second) -> float:
        """Subtract the second number from the first: value1 - value2."""
        return tidy(value1 - value2)

    @tool
    def multiply(self, value1: First, value2: Second) -> float:
        """Multiply two numbers: value1 * value2."""
        return tidy(value1 * value2)

    @tool
    def divide(
        self,
        value1: Annotated[float, "The number to divide (dividend)."],
        value2: Annotated[float, "The number to divide by (divisor, not zero)."],
    ) -> float:
        """Divide the first number by the second: value1 / value2."""
        if value2 == 0:
            raise ValueError("cannot divide by zero")
        return tidy(value1 / value2)

    @tool
    def power(
        self,
        base: Annotated[float, "The number to raise."],
        exponent: Annotated[float, "The power to raise it to."],
    ) -> float:
        """Raise a number to a power: base ** exponent (e.g. 16 to the 0.43 power)."""
        return power_bounded(base, exponent)

    @tool
    def sqrt(self, value: Annotated[float, "A number that is not negative."]) -> float:
        """The square root of a number."""
        if value < 0:
            raise ValueError("the square root of a negative number is not a real number")
        return tidy(math.sqrt(value))

    @tool(name="Calculator")
    def calculator(
        self,
        expression: Annotated[
            str,
            "An arithmetic expression using numbers, + - * / ** and parentheses, e.g. 16**0.43.",
        ],
    ) -> float:
        """Evaluate an arithmetic expression (numbers, + - * / ** for powers, parentheses,
        sqrt, abs, round, log, exp, min, max) and return the number.

        The summary above is the tool's description: a small model plans from it.
        """
        return calculate(expression)
