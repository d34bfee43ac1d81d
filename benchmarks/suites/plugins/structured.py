"""Tools that return objects (structured-results suite): pydantic models, a TypedDict, a
plain dict and a list of models, over invented fixed data.

Why: real functions return objects (an order lookup, a list of offers, a JSON document),
and a plan must take one field of such a result (`$1.total`, `"field": "total"`). The
names appear in no prompt. Data:
- Orders.Get(order_id) -> Order: 17: customer Ada Brook, total 42.5, items pen 2.5 and
  ink 40.0; 23: customer Ravi Tal, total 18.0, items notebook 18.0.
- Cities.Info(city) -> CityInfo (TypedDict): Lumen: country Vesta, population 812000,
  mayor Ines Calder; Korva: country Ostrel, population 154000, mayor Timo Haas.
- Sensors.Reading(sensor) -> dict (no declared keys): S1: {"temp": 21.5, "humidity": 40};
  S2: {"temp": 17.0, "humidity": 65}.
- Flights.Search(destination) -> list[Offer]: Lumen: [Skyline 320.0, Aerona 275.0];
  Korva: [Aerona 140.0].
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel
from typing_extensions import TypedDict

from localagent.tools.decorator import tool


class Item(BaseModel):
    name: str
    price: float


class Order(BaseModel):
    customer: str
    total: float
    items: list[Item]


class CityInfo(TypedDict):
    country: str
    population: int
    mayor: str


class Offer(BaseModel):
    airline: str
    price: float


ORDERS = {
    17: Order(customer="Ada Brook", total=42.5,
              items=[Item(name="pen", price=2.5), Item(name="ink", price=40.0)]),
    23: Order(customer="Ravi Tal", total=18.0, items=[Item(name="notebook", price=18.0)]),
}
CITIES: dict[str, CityInfo] = {
    "Lumen": {"country": "Vesta", "population": 812000, "mayor": "Ines Calder"},
    "Korva": {"country": "Ostrel", "population": 154000, "mayor": "Timo Haas"},
}
SENSORS: dict[str, dict[str, Any]] = {"S1": {"temp": 21.5, "humidity": 40},
                                       "S2": {"temp": 17.0, "humidity": 65}}
FLIGHTS = {"Lumen": [Offer(airline="Skyline", price=320.0), Offer(airline="Aerona", price=275.0)],
           "Korva": [Offer(airline="Aerona", price=140.0)]}


class Orders:
    @tool
    def Get(self, order_id: int) -> Order:
        """Look up an order by its number: the customer, the total and the items."""
        if order_id not in ORDERS:
            raise ValueError(f"no order {order_id}")
        return ORDERS[order_id]


class Cities:
    @tool
    def Info(self, city: Literal["Lumen", "Korva"]) -> CityInfo:
        """Facts about a city: its country, population and mayor."""
        return CITIES[city]


class Sensors:
    @tool
    def Reading(self, sensor: Literal["S1", "S2"]) -> dict:  # type: ignore[type-arg]
        """The latest reading of a sensor, a JSON object (e.g. temp, humidity)."""
        return dict(SENSORS[sensor])


class Flights:
    @tool
    def Search(self, destination: Literal["Lumen", "Korva"]) -> list[Offer]:
        """Flight offers to a city, cheapest last: airline and price of each."""
        return FLIGHTS[destination]
