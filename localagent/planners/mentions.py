"""The `mentions` technique: a key-like argument may only take a value the goal mentions.

Why: the commonest wrong plan of a 0.5B model on a chain ("the salary of the driver of
Ember") is a guessed intermediate value: `Staff.GetSalary(name="Tomasz")` instead of
`Staff.GetSalary(name=Fleet.GetDriver(vehicle="Ember"))`. For an argument with a closed
set of values (an enum: a `Literal` in the plugin), the planner's copy of the function
keeps only the values the goal mentions; when the goal mentions none, no literal is left,
so the grammar admits only a nested call (tree) or a step reference (sequential) there:
the value must be looked up. A number argument may be a number the goal states or one of
a few everyday constants (`CONSTANTS`: 2 for an average, 100 for a percentage, a million
for figures given "in millions"...), else it too must come from a call; this stops the
"digit soup" of nested arithmetic on invented numbers. When the goal names a value to
look up, the first number argument of a function takes no constant the goal does not
state: a constant adjusts a looked-up value (`divide(sum, 2)`, `multiply(ratio, 100)`)
and comes second; first it only padded plans (`subtract(Total(100, 100), ...)` for the
invoice goal). Open strings are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from localagent.grammar.types import DECLARED, string_enum
from localagent.tools.spec import ToolSpec


def mentioned(value: str, goal: str) -> bool:
    """Whether `goal` names `value` (case-insensitive, as a whole word or phrase)."""
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", goal.lower()) is not None


CONSTANTS = (0, 1, 2, 3, 4, 5, 10, 12, 24, 60, 100, 1000, 1000000)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?(?![\w])")


def stated_numbers(goal: str) -> list[int | float]:
    """The numbers `goal` states ("250 km", "3.5", "1,000" read as 1000)."""
    found: list[int | float] = []
    for text in _NUMBER.findall(goal):
        text = text.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+", text) else (
            text.replace(",", "."))
        number = float(text)
        found.append(int(number) if number.is_integer() else number)
    return list(dict.fromkeys(found))


def goal_numbers(goal: str) -> list[int | float]:
    """The numbers `goal` states, then CONSTANTS."""
    return list(dict.fromkeys([*stated_numbers(goal), *CONSTANTS]))


def _anchor(schema: Any, goal: str, first_number: bool = False) -> Any:
    if not isinstance(schema, dict):
        return schema
    enum = schema.get("enum")
    if string_enum(schema):
        return {**schema, "enum": [v for v in enum if mentioned(v, goal)],
                DECLARED: schema.get(DECLARED, enum)}
    if enum is None and schema.get("type") in ("number", "integer"):
        numbers = stated_numbers(goal) if first_number else goal_numbers(goal)
        if schema["type"] == "integer":
            numbers = [n for n in numbers if isinstance(n, int)]
        return {**schema, "enum": numbers, DECLARED: None}
    return schema


def _names_a_value(tools: Sequence[ToolSpec], goal: str) -> bool:
    """Whether `goal` names a value some enum argument takes (something to look up)."""
    return any(mentioned(v, goal) for t in tools
               for s in t.parameters.get("properties", {}).values() for v in string_enum(s))


def anchor_to_goal(tools: Sequence[ToolSpec], goal: str) -> list[ToolSpec]:
    """The tools with every top-level enum argument narrowed to the values `goal` names,
    and every number argument to the goal's numbers and CONSTANTS; when the goal names a
    value to look up, a function's first number argument to the goal's numbers only
    (else a goal naming nothing could get no plan at all: `Total(?, ...)` has no base)."""
    lookups = _names_a_value(tools, goal)
    out = []
    for tool in tools:
        props = tool.parameters.get("properties", {})
        numbers = [k for k, s in props.items() if isinstance(s, dict) and "enum" not in s
                   and s.get("type") in ("number", "integer")]
        anchored = {k: _anchor(s, goal, first_number=lookups and k == (numbers or [None])[0])
                    for k, s in props.items()}
        if anchored == props:
            out.append(tool)
        else:
            out.append(replace(tool, parameters={**tool.parameters, "properties": anchored}))
    return out
