"""Staff: the employees of a delivery company (generalisation suite).

Data (person: department, yearly salary in euros, manager):
Tomasz: Management, 120000, none (the director); Ingrid: Engineering, 98000, Tomasz;
Leena: Engineering, 64000, Ingrid; Yuki: Engineering, 67000, Ingrid;
Hugo: Logistics, 71000, Tomasz; Priya: Logistics, 52000, Hugo; Rafael: Logistics, 49000, Hugo;
Dev: Sales, 76000, Tomasz; Amara: Sales, 58000, Dev.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Employee = Literal["Tomasz", "Ingrid", "Leena", "Yuki", "Hugo", "Priya", "Rafael", "Dev", "Amara"]
Department = Literal["Management", "Engineering", "Logistics", "Sales"]

STAFF: dict[str, tuple[str, int, str | None]] = {
    "Tomasz": ("Management", 120000, None),
    "Ingrid": ("Engineering", 98000, "Tomasz"),
    "Leena": ("Engineering", 64000, "Ingrid"),
    "Yuki": ("Engineering", 67000, "Ingrid"),
    "Hugo": ("Logistics", 71000, "Tomasz"),
    "Priya": ("Logistics", 52000, "Hugo"),
    "Rafael": ("Logistics", 49000, "Hugo"),
    "Dev": ("Sales", 76000, "Tomasz"),
    "Amara": ("Sales", 58000, "Dev"),
}
DEPARTMENTS: tuple[str, ...] = ("Management", "Engineering", "Logistics", "Sales")

Name = Annotated[Employee, "The employee's first name, e.g. Priya."]


def _person(name: str) -> tuple[str, int, str | None]:
    if name not in STAFF:
        raise ValueError(f"no employee named {name!r}; known employees: {', '.join(STAFF)}")
    return STAFF[name]


class Staff:
    """The company's employees: department, salary and manager."""

    @tool(name="GetSalary")
    def get_salary(self, name: Name) -> int:
        """Get an employee's yearly salary, in euros."""
        return _person(name)[1]

    @tool(name="GetDepartment")
    def get_department(self, name: Name) -> Department:
        """Get the department an employee works in."""
        return _person(name)[0]

    @tool(name="GetManager")
    def get_manager(self, name: Name) -> Employee:
        """Get the name of an employee's manager."""
        manager = _person(name)[2]
        if manager is None:
            raise ValueError(f"{name} is the director and has no manager")
        return manager

    @tool(name="ListDepartment")
    def list_department(
        self, department: Annotated[Department, "The department, e.g. Sales."]
    ) -> list[str]:
        """List the names of the employees who work in a department."""
        if department not in DEPARTMENTS:
            raise ValueError(
                f"no department {department!r}; known departments: {', '.join(DEPARTMENTS)}"
            )
        return [name for name, (dept, _, _) in STAFF.items() if dept == department]
