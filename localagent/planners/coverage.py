"""The `values` technique: every enum value the goal writes verbatim is passed to a call.

Why: in a ReAct or tool-calling loop a 0.5B model answers after the first call that looks
useful and skips the rest of the goal; in a tree plan it anchors on the first values it
reads and drops the rest. The enum values of the tools' arguments that the goal writes (a
company, a currency: `stated_enum_values`) say which lookups the goal needs. In the loops,
while one of them has not appeared in any call, the grammar admits no answer and offers
only the functions that could take it (`Coverage`); the model still chooses the function
and the arguments, and on the last allowed step any answer is admitted. The tree planner
passes the same values to the covering grammar (grammar/covering.py), with the groups of
values the goal lists with marks only (`listed_groups`).

Reads no words: a value counts where the goal writes it as a whole token, and a value of
one or two characters ("A", the company) only in the same case, so that the article "a"
does not count as naming company A.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.grammar.types import string_enum
from localagent.tools.spec import ToolSpec

SHORT = 2  # values this short must match the goal's case
# A list written with marks only, in any script: "C, F", "C/F", "C & F", "C、F".
LISTED_BY_MARKS = re.compile(r"\s*[,&+/\u3001\uff0c]\s*")


def _enum_values(tool: ToolSpec) -> list[str]:
    return [v for schema in tool.parameters.get("properties", {}).values()
            for v in string_enum(schema)]


def named_at(value: str, goal: str) -> int | None:
    """Where `goal` names `value` (None: it does not)."""
    flags = 0 if len(value) <= SHORT else re.IGNORECASE
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", goal, flags)
    return found.start() if found else None


def stated_enum_values(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The enum values of the tools' arguments that `goal` states verbatim, in goal order
    (a whole token; one or two characters: in the same case)."""
    values = dict.fromkeys(v for t in tools for v in _enum_values(t))
    found = {v: named_at(v, goal) for v in values}
    return sorted((v for v, at in found.items() if at is not None), key=lambda v: found[v])


def listed_groups(goal: str, values: Sequence[str]) -> list[int]:
    """The group of each value (in goal order): consecutive values separated only by
    marks (`LISTED_BY_MARKS`: "C, F", "C、F") share a group."""
    groups: list[int] = []
    end = None
    for v in values:
        at = named_at(v, goal)
        if at is None:
            raise ValueError(f"{v!r} is not named in the goal")
        if end is None:
            groups.append(0)
        elif LISTED_BY_MARKS.fullmatch(goal[end:at]):
            groups.append(groups[-1])  # listed with the value before it
        else:
            groups.append(groups[-1] + 1)
        end = at + len(v)
    return groups


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value.strip().lower()
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _uncovered(named: Sequence[str], used: set[str]) -> list[str]:
    """The named values no call used (a text argument that holds the value, or most of
    it, counts: "Silent River" for "The Silent River")."""
    def covered(value: str) -> bool:
        v = value.lower()
        return any(v == s or (len(v) > SHORT and v in s) or (len(s) > SHORT and s in v)
                   for s in used)

    return [v for v in named if not covered(v)]


def _free_text(tool: ToolSpec) -> bool:
    return any(isinstance(s, dict) and s.get("type") == "string" and "enum" not in s
               for s in tool.parameters.get("properties", {}).values())


def tools_taking(tools: Sequence[ToolSpec], values: Sequence[str]) -> list[ToolSpec]:
    """The tools that could take one of `values`: an enum argument that admits it, or
    (for a value no enum of `tools` knows) a free text argument."""
    enums = {v for t in tools for v in _enum_values(t)}
    wanted, free = set(values) & enums, set(values) - enums
    return [t for t in tools if wanted.intersection(_enum_values(t)) or (
        free and _free_text(t))]


def callable_now(tool: ToolSpec) -> bool:
    """Whether every required argument admits some value (`mentions` can narrow a key
    argument to nothing until an observation names one)."""
    props = tool.parameters.get("properties", {})
    return not any(isinstance(props.get(k), dict) and props[k].get("enum") == []
                   for k in tool.parameters.get("required", []))


@dataclass
class Coverage:
    """One loop's `values` state, shared by the ReAct and tool-calling loops: the values
    the goal states and the argument texts the calls so far used."""

    named: list[str]
    used: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, goal: str, tools: Sequence[ToolSpec], on: bool) -> Coverage:
        """Empty (nothing to cover) when `values` is off."""
        return cls(stated_enum_values(goal, tools) if on else [])

    def record(self, args: dict[str, Any]) -> None:
        self.used.update(_strings(args))

    def must_call(self, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
        """The tools the next step must choose from ([]: it may answer): those that could
        take a stated value no call used yet (`tools` as the step may call them; one that
        cannot be called now is left out)."""
        if not self.named:
            return []
        return [t for t in tools_taking(tools, _uncovered(self.named, self.used))
                if callable_now(t)]
