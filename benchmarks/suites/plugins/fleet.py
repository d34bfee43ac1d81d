"""Fleet: the vehicles of a delivery company (generalisation suite).

Data (vehicle: mileage km, tank litres, consumption litres per 100 km, driver):
Atlas: 48200, 60, 7.5, Priya; Bison: 120500, 80, 12.5, Hugo; Condor: 15300, 45, 5, Leena;
Dingo: 87650, 70, 14, Rafael; Ember: 33900, 50, 4, Amara.
Drivers are people of the Staff plugin, so a driver's name can feed a Staff lookup.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Vehicle = Literal["Atlas", "Bison", "Condor", "Dingo", "Ember"]
Driver = Literal["Priya", "Hugo", "Leena", "Rafael", "Amara"]  # people of the Staff plugin

VEHICLES: dict[str, tuple[int, int, float, str]] = {
    "Atlas": (48200, 60, 7.5, "Priya"),
    "Bison": (120500, 80, 12.5, "Hugo"),
    "Condor": (15300, 45, 5.0, "Leena"),
    "Dingo": (87650, 70, 14.0, "Rafael"),
    "Ember": (33900, 50, 4.0, "Amara"),
}

VehicleArg = Annotated[Vehicle, "The vehicle's name, e.g. Atlas."]


def _vehicle(name: str) -> tuple[int, int, float, str]:
    if name not in VEHICLES:
        raise ValueError(f"no vehicle named {name!r}; known vehicles: {', '.join(VEHICLES)}")
    return VEHICLES[name]


class Fleet:
    """The company's vehicles: odometer, fuel tank, fuel use and regular driver."""

    @tool(name="GetMileage")
    def get_mileage(self, vehicle: VehicleArg) -> int:
        """Get the mileage of a vehicle: the kilometres on its odometer."""
        return _vehicle(vehicle)[0]

    @tool(name="GetTankSize")
    def get_tank_size(self, vehicle: VehicleArg) -> int:
        """Get the size of a vehicle's fuel tank, in litres."""
        return _vehicle(vehicle)[1]

    @tool(name="GetConsumption")
    def get_consumption(self, vehicle: VehicleArg) -> float:
        """Get a vehicle's fuel consumption, in litres per 100 km."""
        return _vehicle(vehicle)[2]

    @tool(name="GetDriver")
    def get_driver(self, vehicle: VehicleArg) -> Driver:
        """Get the name of the person who drives a vehicle."""
        return _vehicle(vehicle)[3]
