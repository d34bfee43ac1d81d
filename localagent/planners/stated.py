"""How much of a turn's calls the goal states: the share of their required values that the
goal writes (`stated_share`), and calls without the optional values it does not state
(`without_unstated_options`).

Why: a model offered only functions that do not fit a goal calls one anyway more often than
it declines (BFCL `irrelevance`: "the sine of 45 degrees" answered with
`create_polygon(vertices=[0, 0], ...)`, "the population of New York" with
`time_converter(user_timezone="America/New_York", ...)`), and it must then invent the
values the function requires. Where a function fits, the goal states most of them (a name,
a title, a number, a date). So the share of required values the goal states is evidence,
next to the model's own probability of calling (`decline.py`), that no offered function
fits. An optional argument the goal gives no value for has a default for that case, and a
value the model made up for it replaces the default with a guess (BFCL: `season="2023"`
for "the last match", `store_location="all"`).

A value counts as stated when:
- it is a string the goal names, perhaps with an ending (`mentions.first_mention`,
  `inflected`: characters, any script; "living rooms" states "Living room"), or a string
  holding numbers that the goal all states (a date written another way: "2021-01-01" for
  "January 1, 2021"), or a string composed of runs of letters or digits whose runs the
  goal names hold more than half its letters and digits (a value in the format the tool
  asks for: "Berkeley, CA" for "in Berkeley", "track:Dil Nu artist:Maninder Buttar" for
  "'Dil Nu' by Maninder Buttar"; not "America/New_York" for "in New York");
- it is a number the goal writes in digits, also next to letters ("440Hz", "2nd", "250公里",
  "12,000"), or a hundredth of one (a percentage: 0.03 for "3%");
- it is a boolean, null or one of the argument's enum values: chosen from the schema, so
  the goal cannot be expected to write it.

This reads more loosely than `mentions`, which narrows what a grammar admits; here a value
read as stated only means no evidence against the call. Arrays and objects count by their
scalar leaves. Only required arguments count: an optional
one the model adds was never the goal's to state. Nothing here reads a word of any language.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from localagent.grammar.parse import ToolCall
from localagent.grammar.types import DECLARED
from localagent.planners.coverage import SHORT, named_at
from localagent.planners.mentions import first_mention
from localagent.tools.spec import ToolSpec

_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_RUN = re.compile(r"[^\W_]+")  # letters or digits, any script
_NUMBER = re.compile(r"(?<!\d)-?\d+(?:[.,]\d+)*")  # "2021-01-01": 2021, 1, 1


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside `value` (itself, when it is one)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def written_numbers(goal: str) -> list[float]:
    """The numbers `goal` writes in digits, wherever they stand ("440Hz" is 440). A mark
    before groups of three digits separates thousands ("12,000", "1.000.000"); a single
    mark is a decimal point ("3,5", "0.25"), and one before three digits is read both
    ways ("1,234": 1234 and 1.234)."""
    found: list[float] = []
    for text in _NUMBER.findall(goal):
        groups = re.split(r"[.,]", text)
        whole = float("".join(groups))
        if len(groups) == 1:
            found.append(whole)
            continue
        if all(len(g) == 3 for g in groups[1:]):
            found.append(whole)
        if len(groups) == 2:
            found.append(float(f"{groups[0]}.{groups[1]}"))
    return found


def _number_stated(value: float, numbers: Sequence[float]) -> bool:
    return any(math.isclose(value, n, abs_tol=1e-9) or math.isclose(value * 100, n, abs_tol=1e-6)
               for n in numbers)


def value_stated(value: Any, goal: str, numbers: Sequence[float],
                 choices: Sequence[Any] = ()) -> bool:
    """Whether `goal` (whose `written_numbers` are `numbers`) states `value` (see module)."""
    if value is None or isinstance(value, bool) or value in choices:
        return True
    if isinstance(value, int | float):
        return _number_stated(float(value), numbers)
    text = str(value).strip()
    if not text or first_mention(text, goal, inflected=True) is not None:
        return True
    digits = [float(d) for d in _DIGITS.findall(text)]
    if digits and all(_number_stated(d, numbers) for d in digits):
        return True
    runs = _RUN.findall(text)
    named = sum(len(r) for r in runs if _run_stated(r, goal, numbers))
    return len(runs) > 1 and 2 * named > sum(len(r) for r in runs)


def _run_stated(run: str, goal: str, numbers: Sequence[float]) -> bool:
    """One run of letters or digits of a composed value: a number the goal writes, a run
    of one or two Latin letters as a whole token in the same case (read loosely, "CA"
    would be the start of any word), any other as a mention."""
    if run.isdigit():
        return _number_stated(float(run), numbers)
    if len(run) <= SHORT and run.isascii():
        return named_at(run, goal) is not None
    return first_mention(run, goal, inflected=True) is not None


def _choices(schema: Any) -> list[Any]:
    """The values an argument's schema lists (its items' for an array), before `mentions`
    narrowed them."""
    if not isinstance(schema, dict):
        return []
    listed = schema.get(DECLARED, schema.get("enum"))
    if listed is not None:
        return list(listed)
    return _choices(schema.get("items"))


def _leaves_stated(value: Any, schema: Any, text: str, numbers: Sequence[float]) -> list[bool]:
    """For each scalar leaf of an argument's `value`, whether `text` states it."""
    choices = _choices(schema)
    return [value_stated(leaf, text, numbers, choices) for leaf in leaves(value)]


def stated_share(calls: Sequence[ToolCall], goal: str,
                 tools: Sequence[ToolSpec]) -> float | None:
    """The share of the scalar values of `calls`' required arguments that `goal` states;
    None when the calls have none (nothing to judge)."""
    spec = {t.qualified_name: t for t in tools}
    numbers = written_numbers(goal)
    stated = total = 0
    for call in calls:
        tool = spec.get(call.function)
        if tool is None:
            continue
        properties = tool.parameters.get("properties", {})
        for name in tool.parameters.get("required", []):
            if name in call.args:
                flags = _leaves_stated(call.args[name], properties.get(name), goal, numbers)
                stated, total = stated + sum(flags), total + len(flags)
    return stated / total if total else None


def without_unstated_options(calls: Sequence[ToolCall], text: str,
                             tools: Sequence[ToolSpec]) -> tuple[ToolCall, ...]:
    """`calls` without the optional arguments whose value `text` (the goal, and what calls
    returned so far) does not state: the function's default applies instead. Required
    arguments and calls of functions not in `tools` are kept as they are."""
    spec = {t.qualified_name: t for t in tools}
    numbers = written_numbers(text)
    out = []
    for call in calls:
        tool = spec.get(call.function)
        if tool is None:
            out.append(call)
            continue
        required = set(tool.parameters.get("required", []))
        properties = tool.parameters.get("properties", {})
        args = {name: value for name, value in call.args.items()
                if name in required
                or all(_leaves_stated(value, properties.get(name), text, numbers))}
        out.append(call if args == call.args else ToolCall(call.function, args))
    return tuple(out)
