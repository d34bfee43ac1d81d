"""PersonalAssistant: a small address book (name, age, sex, home city).

Scenario: "What is Furina's age raised to the 0.43 power?" -> GetPersonAge("Furina") = 16,
then MathPlugin.Calculator("16**0.43") = 3.2943...
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel

from localagent.tools.decorator import tool

Name = Annotated[str, "The person's first name, e.g. Furina."]


class Person(BaseModel):
    name: str
    age: int
    sex: Literal["female", "male"]
    city: str


PEOPLE: tuple[Person, ...] = (
    Person(name="Furina", age=16, sex="female", city="Paris"),
    Person(name="Alice", age=34, sex="female", city="London"),
    Person(name="Bob", age=41, sex="male", city="Athens"),
    Person(name="Jonas", age=28, sex="male", city="Berlin"),
    Person(name="Marta", age=52, sex="female", city="Madrid"),
    Person(name="Kenji", age=23, sex="male", city="Tokyo"),
)


def find_person(name: str) -> Person:
    wanted = name.strip().lower()
    for person in PEOPLE:
        if person.name.lower() == wanted:
            return person
    known = ", ".join(p.name for p in PEOPLE)
    raise LookupError(f"no person named {name!r}; known people: {known}")


class PersonalAssistant:
    """Facts about the people the user knows."""

    @tool(name="GetPerson")
    def get_person(self, name: Name) -> Person:
        """Get everything known about a person: name, age, sex and home city."""
        return find_person(name)

    @tool(name="GetPersonAge")
    def get_person_age(self, name: Name) -> int:
        """Get the age in years (a number) of a person."""
        return find_person(name).age

    @tool(name="GetPersonSex")
    def get_person_sex(self, name: Name) -> Literal["female", "male"]:
        """Get the sex of a person: female or male."""
        return find_person(name).sex

    @tool(name="GetPersonCity")
    def get_person_city(self, name: Name) -> str:
        """Get the city where a person lives."""
        return find_person(name).city

    @tool(name="ListPeople")
    def list_people(self) -> list[str]:
        """List the names of all the people the assistant knows."""
        return [p.name for p in PEOPLE]
