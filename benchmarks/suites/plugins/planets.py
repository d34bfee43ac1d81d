"""Planets: moons, diameter and distance from the sun of the eight planets
(generalisation suite).

Fixed data (planet: moons, diameter km, mean distance from the sun in million km):
Mercury: 0, 4879, 57.9; Venus: 0, 12104, 108.2; Earth: 1, 12756, 149.6; Mars: 2, 6792, 227.9;
Jupiter: 95, 142984, 778.5; Saturn: 146, 120536, 1432; Uranus: 28, 51118, 2867;
Neptune: 16, 49528, 4515.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Planet = Literal["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"]

PLANETS: dict[str, tuple[int, int, float]] = {
    "Mercury": (0, 4879, 57.9),
    "Venus": (0, 12104, 108.2),
    "Earth": (1, 12756, 149.6),
    "Mars": (2, 6792, 227.9),
    "Jupiter": (95, 142984, 778.5),
    "Saturn": (146, 120536, 1432.0),
    "Uranus": (28, 51118, 2867.0),
    "Neptune": (16, 49528, 4515.0),
}

PlanetArg = Annotated[Planet, "The planet's name, e.g. Mars."]


def _planet(name: str) -> tuple[int, int, float]:
    if name not in PLANETS:
        raise ValueError(f"no planet named {name!r}; known planets: {', '.join(PLANETS)}")
    return PLANETS[name]


class Planets:
    """The planets of the solar system: moons, size and distance from the sun."""

    @tool(name="GetMoons")
    def get_moons(self, planet: PlanetArg) -> int:
        """Get the number of known moons of a planet."""
        return _planet(planet)[0]

    @tool(name="GetDiameter")
    def get_diameter(self, planet: PlanetArg) -> int:
        """Get the diameter of a planet, in kilometres."""
        return _planet(planet)[1]

    @tool(name="GetDistance")
    def get_distance(self, planet: PlanetArg) -> float:
        """Get a planet's mean distance from the sun, in millions of kilometres."""
        return _planet(planet)[2]

    @tool(name="FartherFromSun")
    def farther_from_sun(
        self,
        planet_a: Annotated[Planet, "The first planet."],
        planet_b: Annotated[Planet, "The second planet."],
    ) -> Planet:
        """Of two planets, get the name of the one farther from the sun."""
        return planet_a if _planet(planet_a)[2] >= _planet(planet_b)[2] else planet_b
