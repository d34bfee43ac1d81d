"""The `mentions` technique: a key-like argument may only take a value the goal mentions.

Why: the commonest wrong plan of a 0.5B model on a chain ("the salary of the driver of
Ember") is a guessed intermediate value: `Staff.GetSalary(name="Tomasz")` instead of
`Staff.GetSalary(name=Fleet.GetDriver(vehicle="Ember"))`. For an argument with a closed
set of values (an enum: a `Literal` in the plugin), the planner's copy of the function
keeps only the values the goal mentions; when the goal mentions none, no literal is left,
so the grammar admits only a nested call (tree) or a step reference (sequential) there:
the value must be looked up. Open strings and numbers are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from localagent.tools.spec import ToolSpec


def mentioned(value: str, goal: str) -> bool:
    """Whether `goal` names `value` (case-insensitive, as a whole word or phrase)."""
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", goal.lower()) is not None


def _anchor(schema: Any, goal: str) -> Any:
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if not enum or not all(isinstance(v, str) for v in enum):
        return schema
    return {**schema, "enum": [v for v in enum if mentioned(v, goal)]}


def anchor_to_goal(tools: Sequence[ToolSpec], goal: str) -> list[ToolSpec]:
    """The tools with every top-level enum argument narrowed to the values `goal` names."""
    out = []
    for tool in tools:
        props = tool.parameters.get("properties", {})
        anchored = {k: _anchor(s, goal) for k, s in props.items()}
        if anchored == props:
            out.append(tool)
        else:
            out.append(replace(tool, parameters={**tool.parameters, "properties": anchored}))
    return out
