"""Countries: capitals, populations and areas of eight countries (generalisation suite).

Fixed data, rounded (country: capital, population in millions, area in km2):
Peru: Lima, 34.4, 1285216; Norway: Oslo, 5.5, 385207; Kenya: Nairobi, 55.1, 580367;
Canada: Ottawa, 40.1, 9984670; Australia: Canberra, 26.6, 7692024; Egypt: Cairo, 112.7,
1002450; Chile: Santiago, 19.6, 756102; Vietnam: Hanoi, 100.3, 331212.
The answers come from this table, not from the world: a model must call the tools.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Country = Literal["Peru", "Norway", "Kenya", "Canada", "Australia", "Egypt", "Chile", "Vietnam"]
Capital = Literal["Lima", "Oslo", "Nairobi", "Ottawa", "Canberra", "Cairo", "Santiago", "Hanoi"]

COUNTRIES: dict[str, tuple[str, float, int]] = {
    "Peru": ("Lima", 34.4, 1285216),
    "Norway": ("Oslo", 5.5, 385207),
    "Kenya": ("Nairobi", 55.1, 580367),
    "Canada": ("Ottawa", 40.1, 9984670),
    "Australia": ("Canberra", 26.6, 7692024),
    "Egypt": ("Cairo", 112.7, 1002450),
    "Chile": ("Santiago", 19.6, 756102),
    "Vietnam": ("Hanoi", 100.3, 331212),
}

CountryArg = Annotated[Country, "The country's name, e.g. Peru."]


def _country(name: str) -> tuple[str, float, int]:
    if name not in COUNTRIES:
        raise ValueError(f"no country named {name!r}; known countries: {', '.join(COUNTRIES)}")
    return COUNTRIES[name]


class Countries:
    """Facts about eight countries: capital city, population and area."""

    @tool(name="GetCapital")
    def get_capital(self, country: CountryArg) -> Capital:
        """Get the capital city of a country."""
        return _country(country)[0]

    @tool(name="GetPopulation")
    def get_population(self, country: CountryArg) -> float:
        """Get the population of a country, in millions of people."""
        return _country(country)[1]

    @tool(name="GetArea")
    def get_area(self, country: CountryArg) -> int:
        """Get the area of a country, in square kilometres."""
        return _country(country)[2]

    @tool(name="CountryOfCapital")
    def country_of_capital(self, capital: Annotated[Capital, "A capital city, e.g. Lima."]) -> Country:
        """Get the country whose capital is the given city."""
        for country, (city, _, _) in COUNTRIES.items():
            if city == capital:
                return country
        known = ", ".join(c for c, _, _ in COUNTRIES.values())
        raise ValueError(f"{capital!r} is not a known capital; known capitals: {known}")
