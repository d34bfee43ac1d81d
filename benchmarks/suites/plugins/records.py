"""Record-returning tools for the multi-step suite (issue 44): plain `-> dict` results
whose keys only the docstrings name, so a planner learns them at run time.

Data (invented where a model could answer from memory):
- Atlas.City(name): Lyon {country: France, population_millions: 0.52, elevation_m: 173};
  Porto {Portugal, 0.23, 104}; Graz {Austria, 0.29, 353}.
- Atlas.Country(name): France {capital: Paris, currency: EUR, fuel_price_per_litre: 1.89};
  Portugal {Lisbon, EUR, 1.74}; Austria {Vienna, EUR, 1.62}.
- Atlas.Route(origin, destination): Lyon-Porto {distance_km: 1213, hours_by_train: 14.5};
  Lyon-Graz {1011, 11.0}; Porto-Graz {2420, 29.5} (either direction).
- Shelf.Book(title): Lantern Tide {author: Ines Varga, year: 1998, pages: 412};
  Salt and Iron {Tomas Reiner, 2004, 287}.
- Shelf.Author(name): Ines Varga {born: 1961, country: Hungary}; Tomas Reiner {1955,
  Austria}.
- Desk.Order(number): 17 {customer: Ada Brook, total: 40.0, currency: EUR, status:
  shipped}; 23 {Li Wei, 19.9, USD, pending}.
- Convert.KmToMiles(km), Convert.Money(amount, from_currency, to_currency): 1 EUR = 1.08
  USD; Convert.Higher(first, first_value, second, second_value): the name with the higher
  value (a neutral picker, so a plan can express "which of the two").
"""

from __future__ import annotations

from localagent.tools.decorator import tool

CITIES = {"Lyon": {"country": "France", "population_millions": 0.52, "elevation_m": 173},
          "Porto": {"country": "Portugal", "population_millions": 0.23, "elevation_m": 104},
          "Graz": {"country": "Austria", "population_millions": 0.29, "elevation_m": 353}}
COUNTRIES = {"France": {"capital": "Paris", "currency": "EUR", "fuel_price_per_litre": 1.89},
             "Portugal": {"capital": "Lisbon", "currency": "EUR",
                          "fuel_price_per_litre": 1.74},
             "Austria": {"capital": "Vienna", "currency": "EUR", "fuel_price_per_litre": 1.62}}
ROUTES = {frozenset(("Lyon", "Porto")): {"distance_km": 1213, "hours_by_train": 14.5},
          frozenset(("Lyon", "Graz")): {"distance_km": 1011, "hours_by_train": 11.0},
          frozenset(("Porto", "Graz")): {"distance_km": 2420, "hours_by_train": 29.5}}
BOOKS = {"Lantern Tide": {"author": "Ines Varga", "year": 1998, "pages": 412},
         "Salt and Iron": {"author": "Tomas Reiner", "year": 2004, "pages": 287}}
AUTHORS = {"Ines Varga": {"born": 1961, "country": "Hungary"},
           "Tomas Reiner": {"born": 1955, "country": "Austria"}}
ORDERS = {17: {"customer": "Ada Brook", "total": 40.0, "currency": "EUR", "status": "shipped"},
          23: {"customer": "Li Wei", "total": 19.9, "currency": "USD", "status": "pending"}}
USD_PER_UNIT = {"USD": 1.0, "EUR": 1.08}


def _get(table: dict, key: object, what: str) -> dict:
    if key not in table:
        raise ValueError(f"unknown {what} {key!r}; known: {', '.join(map(str, table))}")
    return dict(table[key])


class Atlas:
    """Cities, countries and the routes between cities."""

    @tool(name="City")
    def city(self, name: str) -> dict:
        """A city's record: its country, population_millions and elevation_m."""
        return {"name": name, **_get(CITIES, name, "city")}

    @tool(name="Country")
    def country(self, name: str) -> dict:
        """A country's record: its capital, currency and fuel_price_per_litre (in its
        currency)."""
        return {"name": name, **_get(COUNTRIES, name, "country")}

    @tool(name="Route")
    def route(self, origin: str, destination: str) -> dict:
        """The route between two cities: distance_km and hours_by_train."""
        return _get(ROUTES, frozenset((origin, destination)), "route")


class Shelf:
    """Books and their authors."""

    @tool(name="Book")
    def book(self, title: str) -> dict:
        """A book's record: its author, year (of publication) and pages."""
        return {"title": title, **_get(BOOKS, title, "book")}

    @tool(name="Author")
    def author(self, name: str) -> dict:
        """An author's record: the year they were born and their country."""
        return {"name": name, **_get(AUTHORS, name, "author")}


class Desk:
    """Customer orders."""

    @tool(name="Order")
    def order(self, number: int) -> dict:
        """An order's record: customer, total, currency and status."""
        return {"number": number, **_get(ORDERS, number, "order")}


class Convert:
    """Unit and currency conversions, and a picker."""

    @tool(name="KmToMiles")
    def km_to_miles(self, km: float) -> float:
        """Convert a distance in kilometres to miles."""
        return round(km * 0.621371, 1)

    @tool(name="Money")
    def money(self, amount: float, from_currency: str, to_currency: str) -> float:
        """Convert an amount of money between currencies (USD, EUR)."""
        for code in (from_currency, to_currency):
            if code not in USD_PER_UNIT:
                raise ValueError(f"unknown currency {code!r}; known: USD, EUR")
        return round(amount * USD_PER_UNIT[from_currency] / USD_PER_UNIT[to_currency], 2)

    @tool(name="Higher")
    def higher(self, first: str, first_value: float, second: str,
               second_value: float) -> str:
        """Of two named things, the name of the one with the higher value."""
        return first if first_value >= second_value else second
