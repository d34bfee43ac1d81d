"""The `cover` and `calls` techniques: no answer before every value the goal names was
looked up (`cover`), and every function it names was called (`calls`).

Why: in a ReAct or tool-calling loop a 0.5B model answers after the first call that looks
useful and skips the rest of the goal. Seen: asked to convert a sum of money only if it
rained in a named city today, it converted the money and answered without ever looking up
that city's weather. The values a goal names say which lookups the goal needs:
values of the tools' closed sets (an enum: a company, a currency) and proper names (a
capitalised word inside a sentence: "Tallinn", "Ada"), which a function with a free
text argument may take. While one of them has not appeared in any call, the grammar admits
no answer and offers only the functions that could take it. The model still chooses the
function and the arguments; on the last allowed step any answer is admitted.

A value of one or two characters ("A", the company) must appear in the goal with the same
case, so that the article "a" does not count as naming company A. A goal that asks for
free text (write, translate...: `grounding.asks_for_text`) is exempt: its capitalised
words ("French", "Victorian") describe the text rather than name things to look up.
Known cost: a goal that names something no function takes ("in Celsius") keeps the loop
calling until the last allowed step, where any answer is admitted again.

`calls`: the same early answer on a chain: "What club does Ada's tutor belong to?"
answered with the tutor's name after the tutor lookup. The goal names the functions it
needs by their telling words ("club", "tutor": named.py), so until each was called the
loop may not answer. A function that cannot be called yet (its key argument narrowed to
nothing by `mentions` until an observation names one) does not hold the loop up. A
function mapping a thing to its own kind that the goal names twice ("the tutor of Ada's
tutor") must be called twice: seen, ReAct and tool calling answered with the first tutor
after one lookup. (Other functions named twice name one lookup twice: "Ada's fee ... the
yearly fee"; two lookups of different values are `cover`'s matter.)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.grammar.types import string_enum
from localagent.planners.grounding import asks_for_text
from localagent.planners.head import head_roots, says_count
from localagent.planners.named import functions_named
from localagent.planners.nesting import goal_words, maps_to_own_kind
from localagent.planners.nouns import needed_functions
from localagent.tools.spec import ToolSpec

SHORT = 2  # values this short must match the goal's case


_NAME = re.compile(r"(?<=[a-z0-9,;:'\")] )[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


def proper_names(goal: str) -> list[str]:
    """Capitalised words (or runs of them) inside a sentence: "Tallinn", "New York"; not
    the first word of a sentence, not "I", and not all-capital codes (EUR: those are
    enum values where a tool knows them)."""
    names = [m.group(0).removesuffix("'s") for m in _NAME.finditer(goal)]
    return list(dict.fromkeys(n for n in names if n != "I" and not n.isupper()))


def _free_text(tool: ToolSpec) -> bool:
    return any(isinstance(s, dict) and s.get("type") == "string" and "enum" not in s
               for s in tool.parameters.get("properties", {}).values())


def _enum_values(tool: ToolSpec) -> list[str]:
    return [v for schema in tool.parameters.get("properties", {}).values()
            for v in string_enum(schema)]


def _position(value: str, goal: str) -> int | None:
    """Where `goal` names `value` (None: it does not)."""
    flags = 0 if len(value) <= SHORT else re.IGNORECASE
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", goal, flags)
    return found.start() if found else None


def named_values(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The enum values of the tools' arguments that `goal` names and, when some tool
    takes free text, the goal's other proper names; in the order the goal names them."""
    values = dict.fromkeys(v for t in tools for v in _enum_values(t))
    if any(_free_text(t) for t in tools):
        lowered = {v.lower() for v in values}
        values.update(dict.fromkeys(n for n in proper_names(goal) if n.lower() not in lowered))
    return _in_goal_order(values, goal)


def named_enum_values(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The enum values of the tools' arguments that `goal` names, in goal order (what a
    tree plan must pass to some call under `cover`); none for a free-text goal."""
    if asks_for_text(goal):
        return []
    return stated_enum_values(goal, tools)


def stated_enum_values(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The enum values of the tools' arguments that `goal` states verbatim, in goal order
    (the `values` technique). Reads no words: a value counts where the goal writes it as a
    whole token (one or two characters: in the same case)."""
    return _in_goal_order(dict.fromkeys(v for t in tools for v in _enum_values(t)), goal)


def _in_goal_order(values: Iterable[str], goal: str) -> list[str]:
    """The `values` the goal names (`_position`), in the order it names them."""
    found = {v: _position(v, goal) for v in values}
    return sorted((v for v, at in found.items() if at is not None), key=lambda v: found[v])


_LISTED = re.compile(r"\s*(?:,|,?\s*(?:and|or|&))\s*", re.IGNORECASE)
# A list written with marks only, in any script: "C, F", "C/F", "C & F", "C、F" (`values`).
LISTED_BY_MARKS = re.compile(r"\s*[,&+/\u3001\uff0c]\s*")


def listed_groups(goal: str, values: Sequence[str], listed: re.Pattern[str] = _LISTED
                  ) -> list[int]:
    """The group of each value (in goal order): consecutive values separated only by
    `listed` share a group; by default a comma, "and" or "or" ("company B, D", "Tallinn
    and Quito"), with `LISTED_BY_MARKS` punctuation only."""
    groups: list[int] = []
    end = None
    for v in values:
        at = _position(v, goal)
        if at is None:
            raise ValueError(f"{v!r} is not named in the goal")
        if end is None:
            groups.append(0)
        elif listed.fullmatch(goal[end:at]):
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
    def covered(value: str) -> bool:
        v = value.lower()
        return any(v == s or (len(v) > SHORT and v in s) or (len(s) > SHORT and s in v)
                   for s in used)

    return [v for v in named if not covered(v)]


def pending(named: Sequence[str], calls_args: Iterable[dict[str, Any]]) -> list[str]:
    """The named values that no call so far passed as an argument (a text argument that
    holds the value, or most of it, counts: "Silent River" for "The Silent River")."""
    return _uncovered(named, {s for args in calls_args for s in _strings(args)})


def tools_taking(tools: Sequence[ToolSpec], values: Sequence[str]) -> list[ToolSpec]:
    """The tools that could take one of `values`: an enum argument that admits it, or
    (for a value no enum knows) a free text argument."""
    enums = {v for t in tools for v in _enum_values(t)}
    wanted, free = set(values) & enums, set(values) - enums
    return [t for t in tools if wanted.intersection(_enum_values(t)) or (
        free and _free_text(t))]


def named_functions(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The functions `goal` names by the telling words of their names ("club" and
    "tutor" in "What club does Ada's tutor belong to?"), in goal order; one mapping a
    thing to its own kind and named twice ("the tutor of Ada's tutor") is listed twice."""
    words = goal_words(goal)
    return [t.qualified_name for t in functions_named(goal, tools)
            for _ in range(says_count(t, words) if maps_to_own_kind(t) else 1)]


def callable_now(tool: ToolSpec) -> bool:
    """Whether every required argument admits some value (`mentions` can narrow a key
    argument to nothing until an observation names one)."""
    props = tool.parameters.get("properties", {})
    return not any(isinstance(props.get(k), dict) and props[k].get("enum") == []
                   for k in tool.parameters.get("required", []))


@dataclass
class Coverage:
    """One loop's `cover` and `calls` state, shared by the ReAct and tool-calling loops:
    the values and the functions the goal names, the argument texts the calls so far
    used and the functions they called."""

    named: list[str]
    functions: list[str] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    called: Counter[str] = field(default_factory=Counter)  # calls per function
    needs: list[list[str]] = field(default_factory=list)  # call one function of each
    last: list[str] = field(default_factory=list)  # then one of these (`head`)
    fresh: bool = False  # `result`: the head's call counts only as the latest call
    latest: str | None = None  # the function of the latest call

    @classmethod
    def of(cls, goal: str, tools: Sequence[ToolSpec], on: bool,
           calls: bool = False, head: bool = False, nouns: bool = False,
           result: bool = False, values: bool = False) -> Coverage:
        """Empty (nothing to cover) when `cover`, `calls`, `head`, `nouns` and `values`
        are off, or when one of the English-only ones is on and the goal asks for free
        text. `head`: a function the question's head names
        (head.py: subtract for "more ... than") must be called before the answer;
        `nouns`: one of those each possessive or of-phrase names (nouns.py). The head's
        functions are offered last, once nothing else is pending: the operation comes
        after the lookups it combines. `result`: the head's function must be the latest
        call (a lookup made after the subtraction asks for the subtraction again), and
        then the loop is `finished`. `values` (language-neutral, alone): the enum values
        the goal writes verbatim must be passed to some call (`stated_enum_values`: no
        proper names, no free-text exemption, which read English)."""
        if not (on or calls or head or nouns or result):
            return cls(stated_enum_values(goal, tools) if values else [])
        if asks_for_text(goal):
            return cls([])
        return cls(named_values(goal, tools) if on else
                   stated_enum_values(goal, tools) if values else [],
                   named_functions(goal, tools) if calls else [],
                   needs=needed_functions(goal, tools) if nouns else [],
                   last=(head_roots(goal, tools) or []) if head else [], fresh=result)

    def record(self, args: dict[str, Any], function: str) -> None:
        self.used.update(_strings(args))
        self.called[function] += 1
        self.latest = function

    def _head_called(self) -> bool:
        if self.fresh:
            return self.latest in self.last
        return any(self.called[f] for f in self.last)

    def finished(self, pending: Sequence[ToolSpec]) -> bool:
        """With `result` and `head`: nothing is pending (`pending`: what `must_call`
        returned for this step) and the latest call was the head's function, so its result
        is the answer and the loop should give it."""
        return self.fresh and self._head_called() and not pending

    def must_call(self, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
        """The tools the next step must choose from ([]: it may answer): those that could
        take a named value no call used yet, and the named functions not called yet
        (`tools` as the step may call them; one that cannot be called now is left out)."""
        must = tools_taking(tools, _uncovered(self.named, self.used)) if self.named else []
        waiting = {f for f, times in Counter(self.functions).items() if self.called[f] < times}
        for group in self.needs:
            waiting |= set() if any(self.called[f] for f in group) else set(group)
        must += [t for t in tools if t.qualified_name in waiting and t not in must]
        must = [t for t in must if callable_now(t)]
        if not must and self.last and not self._head_called():
            # once the named values are looked up (`cover`), the asked operation is next;
            # without `cover` nothing says what is still missing: any call, no answer
            must = [t for t in tools if callable_now(t)
                    and (t.qualified_name in self.last or not self.named)]
        return must
