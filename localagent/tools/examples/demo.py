"""DemoPlugin: the invoice scenario ("total of the invoices of A and C minus B's").

Companies A..F have invoices of 2000, 1500, 20000, 6700, 1000 and 4100.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.calculator import tidy
from localagent.tools.decorator import tool

Company = Literal["A", "B", "C", "D", "E", "F"]

INVOICES: dict[str, int] = {"A": 2000, "B": 1500, "C": 20000, "D": 6700, "E": 1000, "F": 4100}


class DemoPlugin:
    """Invoices of six companies and two arithmetic helpers to combine them."""

    @tool(name="GetInvoice")
    def get_invoice(
        self, company: Annotated[Company, "The company's letter, one of A, B, C, D, E, F."]
    ) -> int:
        """Get the invoice amount (a number) of a company."""
        return INVOICES[company]

    @tool(name="Total")
    def total(
        self,
        value1: Annotated[float, "The first number to add."],
        value2: Annotated[float, "The second number to add."],
    ) -> float:
        """Add two numbers and return their total (sum)."""
        return tidy(value1 + value2)

    @tool(name="Diff")
    def diff(
        self,
        value1: Annotated[float, "The number to subtract from."],
        value2: Annotated[float, "The number to subtract."],
    ) -> float:
        """Subtract the second number from the first and return the difference (value1 - value2)."""
        return tidy(value1 - value2)
