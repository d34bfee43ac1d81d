"""The `fresh` technique: a call after the first must bring something new.

A later turn of a tool-calling loop is there to build on what the calls returned or to
reach a part of the goal no call has reached yet. So a call there carries a value that a
result shows, or one the goal states that no earlier call passed. A call whose every value
was already passed, or is stated nowhere, adds nothing the user gave: the loop answers
instead (the turn is written again as the last one, which must answer).

Two reuses do count: a value passed again under the same parameter name by another
function (`team="Lynx"` to `GetPoints`, then to `GetGoals`) looks the same thing up in
another way, which is how a goal asks two facts of one entity; and a value a result shows
builds on that result even where an earlier call passed it too (`TopTeam(team_a="Herons",
...)` returns "Herons", then `GetGoals(team="Herons")`). A call that repeats an earlier
one (same function, same arguments) never brings anything.

Why: after a result it cannot use (a lookup whose value says nothing to it), the default
1.5B model reaches for another offered function with the values it already used or with
values it makes up (BFCL `multiple`: `triangle_properties.get(5, 4, 3)`, then
`circle_properties.get(radius=5)`; `math.hcf(36, 24)`, then
`music_generator.generate_scale_progression(key="C", tempo=120)`), 28 of 48 cases.

The first turn is held to the same rule from its second call on (`fresh_first_turn`): a
question in several parts gets one call per part, each passing values of its own part
(BFCL `parallel`: "Taylor Swift for 20 minutes and Maroon 5 for 15"), while a second call
that passes only values the first one passed, or values the goal never states, was added
after the part the goal asks (BFCL `multiple`, the model writing its calls in the chat
template's tags: `whole_foods.check_price(location="Los Angeles", ...)`, then
`calculate_shortest_distance(start_location="Los Angeles", end_location="San Francisco")`
for a goal naming Los Angeles only).

Values are compared as `stated.value_stated` reads them (numbers by value, also in
digits inside text; strings by mention, any script; one or two characters as a whole token
in the same case), an enum value too only where the text
writes it; booleans and nulls carry no information of their own and never count as new. A
call without any other value cannot be judged and is kept. Reads no words of any language.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
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


def _keyed(args: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(parameter name, normalised value) for every informative scalar in `args`."""
    for key, value in args.items():
        for leaf in leaves(value):
            if _informative(leaf):
                yield key, _norm(leaf)


def _signature(call: ToolCall) -> str:
    return call.function + json.dumps(call.args, sort_keys=True, default=str)


@dataclass(frozen=True)
class Used:
    """What earlier calls passed: values, (parameter, value) pairs, and whole calls."""

    values: frozenset[str]
    keyed: frozenset[tuple[str, str]]
    calls: frozenset[str]

    @classmethod
    def of(cls, calls: Iterable[ToolCall]) -> Used:
        calls = list(calls)
        keyed = frozenset(pair for c in calls for pair in _keyed(c.args))
        return cls(values=frozenset(v for _, v in keyed), keyed=keyed,
                   calls=frozenset(_signature(c) for c in calls))


def brings_something(call: ToolCall, text: str, used: Used, numbers: Sequence[float],
                     shown: str = "", shown_numbers: Sequence[float] = ()) -> bool:
    """Whether `call` passes a value that `text` (the goal and the results so far) states
    and that no earlier call passed, or passed only under the same parameter name (`used`),
    or a value the results (`shown`) show; True for a call with no informative value, False
    for a repeated call. `numbers`, `shown_numbers`: `stated.written_numbers` of each text,
    read once per turn."""
    if _signature(call) in used.calls:
        return False
    values = {(key, _norm(leaf)): leaf for key, value in call.args.items()
              for leaf in leaves(value) if _informative(leaf)}
    if not values:
        return True
    return any(((norm not in used.values or (key, norm) in used.keyed)
                and _stated(value, text, numbers))
               or (shown and _stated(value, shown, shown_numbers))
               for (key, norm), value in values.items())


def fresh_calls(calls: Sequence[ToolCall], text: str, earlier: Iterable[ToolCall],
                shown: str = "") -> tuple[ToolCall, ...]:
    """The calls that bring something (`brings_something`), in order, each judged against
    `earlier` and the calls kept before it in the same turn. `text`: the goal and
    everything seen so far; `shown`: the results alone."""
    before, numbers = list(earlier), written_numbers(text)
    shown_numbers = written_numbers(shown)
    kept: list[ToolCall] = []
    for call in calls:
        if brings_something(call, text, Used.of([*before, *kept]), numbers, shown,
                            shown_numbers):
            kept.append(call)
    return tuple(kept)


def fresh_first_turn(calls: Sequence[ToolCall], goal: str) -> tuple[ToolCall, ...]:
    """The first turn's calls that run: the first, as the model chose it, and each later
    one that brings something the calls before it did not (`fresh_calls`: a value the
    goal states that no earlier call of the turn passed, or passed under the same name)."""
    return tuple(calls[:1]) + fresh_calls(calls[1:], goal, calls[:1])
