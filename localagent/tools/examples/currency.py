"""CurrencyPlugin: conversions at fixed, offline exchange rates (1 EUR = 1.08 USD)."""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Currency = Literal["USD", "EUR", "GBP", "JPY", "CHF"]

# Value of one unit in US dollars. Fixed on purpose: answers must be reproducible.
USD_PER_UNIT: dict[str, float] = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CHF": 1.13}


def exchange_rate(from_currency: str, to_currency: str) -> float:
    return round(USD_PER_UNIT[from_currency] / USD_PER_UNIT[to_currency], 6)


class CurrencyPlugin:
    """Convert money between currencies (USD, EUR, GBP, JPY, CHF) at fixed rates."""

    @tool(name="ConvertCurrency")
    def convert_currency(
        self,
        amount: Annotated[float, "The amount of money to convert."],
        from_currency: Annotated[Currency, "The currency of the amount, e.g. EUR."],
        to_currency: Annotated[Currency, "The currency to convert into, e.g. USD."],
    ) -> float:
        """Convert an amount of money from one currency to another, e.g. 100 EUR to USD."""
        return round(amount * USD_PER_UNIT[from_currency] / USD_PER_UNIT[to_currency], 2)

    @tool(name="GetExchangeRate")
    def get_exchange_rate(
        self,
        from_currency: Annotated[Currency, "The currency to convert from, e.g. EUR."],
        to_currency: Annotated[Currency, "The currency to convert into, e.g. USD."],
    ) -> float:
        """How much one unit of a currency is worth in another currency."""
        return exchange_rate(from_currency, to_currency)
