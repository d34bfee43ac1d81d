"""The `fresh` technique: after the first turn, a call must bring something new.

A later turn of a tool-calling loop is there to build on what the calls returned or to
reach a part of the goal no call has reached yet. So a call there carries a value that a
result shows, or one the goal states that no earlier call passed. A call whose every value
was already passed, or is stated nowhere, adds nothing the user gave: the loop answers
instead (the turn is written again as the last one, which must answer).

Why: after a result it cannot use (a lookup whose value says nothing to it), the default
1.5B model reaches for another offered function with the values it already used or with
values it makes up (BFCL `multiple`: `triangle_properties.get(5, 4, 3)`, then
`circle_properties.get(radius=5)`; `math.hcf(36, 24)`, then
`music_generator.generate_scale_progression(key="C", tempo=120)`), 28 of 48 cases.

Values are compared as `stated.value_stated` reads them (numbers by value, also in
digits inside text; strings by mention, any script; one or two characters as a whole token
in the same case), an enum value too only where the text
writes it; booleans and nulls carry no information of their own and never count as new. A
call without any other value cannot be judged and is kept. Reads no words of any language.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from localagent.grammar.parse import ToolCall
from localagent.planners.coverage import SHORT, named_at
from localagent.planners.stated import leaves, value_stated, written_numbers


def _informative(value: Any) -> bool:
    return value is not None and not isinstance(value, bool) and str(value).strip() != ""


def _stated(value: Any, text: str, numbers: Sequence[float]) -> bool:
    """`stated.value_stated`, but a text of one or two characters only as a whole token in
    the same case (`coverage.named_at`): read loosely, "C" is the start of any word."""
    if isinstance(value, str) and len(value.strip()) <= SHORT:
        return named_at(value.strip(), text) is not None
    return value_stated(value, text, numbers)


def _norm(value: Any) -> str:
    if isinstance(value, int | float):
        return repr(float(value))
    return " ".join(str(value).split()).lower()


def used_values(calls: Iterable[ToolCall]) -> set[str]:
    """The informative scalar values `calls` passed, normalised for comparison."""
    return {_norm(leaf) for c in calls for leaf in leaves(c.args) if _informative(leaf)}


def brings_something(call: ToolCall, text: str, used: set[str],
                     numbers: Sequence[float]) -> bool:
    """Whether `call` passes a value that `text` (the goal and the results so far) states
    and no earlier call passed (`used`); True for a call with no informative value.
    `numbers`: `stated.written_numbers(text)`, read once per turn."""
    values = [leaf for leaf in leaves(call.args) if _informative(leaf)]
    if not values:
        return True
    return any(_norm(v) not in used and _stated(v, text, numbers) for v in values)


def fresh_calls(calls: Sequence[ToolCall], text: str,
                earlier: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    """The calls of a later turn that bring something (`brings_something`), in order."""
    used, numbers = used_values(earlier), written_numbers(text)
    return tuple(c for c in calls if brings_something(c, text, used, numbers))
