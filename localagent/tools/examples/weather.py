"""WeatherPlugin: today's weather from fixed, offline data, in two scenarios.

The "bet on rain in Athens" scenario must be reproducible both ways, so the data has a
rainy and a dry version of today in Athens. Choose with `WeatherPlugin(scenario=...)` or
the environment variable `LOCALAGENT_WEATHER` (`rain`, the default, or `dry`); every
other city is the same in both.
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import BaseModel

from localagent.tools.decorator import tool

SCENARIO_ENV = "LOCALAGENT_WEATHER"
Scenario = Literal["rain", "dry"]
City = Annotated[str, "The city's name, e.g. Athens."]


class Weather(BaseModel):
    city: str
    condition: Literal["sunny", "cloudy", "rain", "snow"]
    temperature_c: float
    precipitation_mm: float
    rained_today: bool


def _w(city: str, condition: str, temperature: float, rain_mm: float) -> Weather:
    return Weather(
        city=city,
        condition=condition,
        temperature_c=temperature,  # type: ignore[arg-type]
        precipitation_mm=rain_mm,
        rained_today=rain_mm > 0,
    )


_COMMON = (
    _w("London", "rain", 11.0, 4.2),
    _w("Paris", "cloudy", 14.0, 0.0),
    _w("Berlin", "cloudy", 9.5, 0.0),
    _w("Madrid", "sunny", 22.0, 0.0),
    _w("Rome", "sunny", 20.5, 0.0),
    _w("Tokyo", "rain", 17.0, 12.0),
    _w("New York", "snow", -2.0, 3.0),
)
SCENARIOS: dict[str, tuple[Weather, ...]] = {
    "rain": (_w("Athens", "rain", 16.0, 8.5), *_COMMON),
    "dry": (_w("Athens", "sunny", 24.0, 0.0), *_COMMON),
}


def scenario_from_env() -> Scenario:
    value = os.environ.get(SCENARIO_ENV, "rain").strip().lower() or "rain"
    if value not in SCENARIOS:
        raise ValueError(f"{SCENARIO_ENV}={value!r}: expected 'rain' or 'dry'")
    return value  # type: ignore[return-value]


class WeatherPlugin:
    """Today's weather in a few cities (offline data: Athens, London, Paris, Berlin, Madrid,
    Rome, Tokyo, New York)."""

    def __init__(self, scenario: Scenario | None = None) -> None:
        if scenario is not None and scenario not in SCENARIOS:
            raise ValueError(f"unknown weather scenario {scenario!r}: expected 'rain' or 'dry'")
        self._scenario = scenario

    @property
    def scenario(self) -> Scenario:
        """The fixed scenario, else the environment's at the time of the call."""
        return self._scenario or scenario_from_env()

    def _find(self, city: str) -> Weather:
        wanted = city.strip().lower()
        data = SCENARIOS[self.scenario]
        for weather in data:
            if weather.city.lower() == wanted:
                return weather
        known = ", ".join(w.city for w in data)
        raise LookupError(f"no weather data for {city!r}; known cities: {known}")

    @tool(name="GetWeather")
    def get_weather(self, city: City) -> Weather:
        """Get today's weather in a city: condition, temperature in Celsius, rain in mm."""
        return self._find(city)

    @tool(name="DidItRainToday")
    def did_it_rain_today(self, city: City) -> bool:
        """Whether it rained today in a city: true or false."""
        return self._find(city).rained_today

    @tool(name="GetTemperature")
    def get_temperature(self, city: City) -> float:
        """Get today's temperature in a city, in degrees Celsius."""
        return self._find(city).temperature_c
