"""The `mentions` technique: a key-like argument may only take a value the goal mentions.

Why: the commonest wrong plan of a 0.5B model on a chain ("the fee of the owner of the
boat Osprey") is a guessed intermediate value: `Club.GetFee(name="Oskar")` instead of
`Club.GetFee(name=Marina.GetOwner(boat="Osprey"))`. For an argument with a closed
set of values (an enum: a `Literal` in the plugin), the planner's copy of the function
keeps only the values the goal mentions; when the goal mentions none but another offered
function returns such a value, no literal is left, so the grammar admits only a nested
call (tree) or a step reference (sequential) there: the value must be looked up. When the
goal mentions none and no other offered function can produce one, the enum is left whole:
the value can be neither copied nor looked up, so a goal can only have named it in words of
its own (a currency by its name, not its code), and narrowing would only remove the function
and leave a plan that works around it. A number argument may be a number the goal states
or one of a few everyday constants (`CONSTANTS`: 2 for an average, 100 for a percentage, a
million for figures given "in millions"...), else it too must come from a call; this
stops the "digit soup" of nested arithmetic on invented numbers. When the goal names a
value to look up, the first number argument of a function takes no constant the goal does
not state: a constant adjusts a looked-up value (`divide(sum, 2)`, `multiply(ratio, 100)`)
and comes second; first it only padded plans (seen: `subtract(add(100, 100), ...)` for a
difference of two looked-up sums). Open strings are left alone.

"Mentions" and "states" read characters, never words, so they hold in every script: a
value counts where the characters next to it do not continue it (see `mentioned`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from localagent.grammar.types import DECLARED, fits, string_enum
from localagent.tools.spec import ToolSpec

# Scripts written without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar,
# Tibetan...), and Hangul, whose particles are written onto the word they follow: a
# value in one of them is found as a plain substring, and a character of one of them
# ends a value of any other script ("Ada的", "250公里").
UNSPACED = frozenset({"CJK", "IDEOGRAPHIC", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA",
                      "HALFWIDTH", "BOPOMOFO", "YI", "HANGUL", "THAI", "LAO", "KHMER",
                      "MYANMAR", "TIBETAN", "JAVANESE", "BALINESE"})
_ANY = "*"  # digits, "_" and combining marks: part of a word of any spaced script


def _script(ch: str) -> str | None:
    """The kind of word `ch` belongs to: its script's name ("LATIN", "CYRILLIC", "CJK"),
    `_ANY` for digits, "_" and combining marks; None for a character that is no part of
    a word (space, punctuation, symbol)."""
    category = unicodedata.category(ch)
    if category[0] not in "LNM" and ch != "_":
        return None
    script = unicodedata.name(ch, "").split(" ")[0]
    if script in UNSPACED:
        return script
    return script if category[0] == "L" else _ANY


def _continues(neighbour: str, edge: str) -> bool:
    """Whether `neighbour`, written next to a value's `edge` character, continues the
    word `edge` is part of: both are letters or digits of one spaced script (digits and
    "_" go with any). A value's punctuation edge goes with any spaced script's letters,
    as a regex's word boundary would."""
    theirs, ours = _script(neighbour), _script(edge)
    if theirs is None or theirs in UNSPACED or ours in UNSPACED:
        return False
    return _ANY in (theirs, ours or _ANY) or theirs == ours


@lru_cache(maxsize=256)
def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def mentioned(value: str, goal: str) -> bool:
    """Whether `goal` names `value`: case-insensitive and up to compatibility forms
    (NFKC: full-width "Ｏｓｋａｒ" is "Oskar"), where the characters either side do not
    continue it (`_continues`): "Nepal" is named in "Nepal's" and "Nepal的首都", not in
    "Nepali"; a value in a script written without spaces is named anywhere in the goal."""
    return first_mention(value, goal) is not None


def first_mention(value: str, goal: str, *, inflected: bool = False) -> int | None:
    """Where `goal` first names `value` (as `mentioned` reads it), in folded characters;
    None where it does not. `inflected`: the goal may continue the value on its right
    (an ending: "living rooms" names "Living room", "Berlins" names "Berlin")."""
    v, text = _fold(value), _fold(goal)
    if not v:
        return None
    at = text.find(v)
    while at >= 0:
        end = at + len(v)
        if not (at and _continues(text[at - 1], v[0])) and (inflected or not (
                end < len(text) and _continues(text[end], v[-1]))):
            return at
        at = text.find(v, at + 1)
    return None


CONSTANTS = (0, 1, 2, 3, 4, 5, 10, 12, 24, 60, 100, 1000, 1000000)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?(?![\w])")


def stated_numbers(goal: str) -> list[int | float]:
    """The numbers `goal` states ("250 km", "3.5", "1,000" read as 1000, "250公里"): a
    number is bounded as a value is in `mentioned` (a character of a script written without
    spaces ends it; a letter of any other script continues it: "250km" states none)."""
    spaced = "".join(" " if _script(ch) in UNSPACED else ch for ch in goal)
    found: list[int | float] = []
    for text in _NUMBER.findall(spaced):
        text = text.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+", text) else (
            text.replace(",", "."))
        number = float(text)
        found.append(int(number) if number.is_integer() else number)
    return list(dict.fromkeys(found))


def goal_numbers(goal: str) -> list[int | float]:
    """The numbers `goal` states, then CONSTANTS."""
    return list(dict.fromkeys([*stated_numbers(goal), *CONSTANTS]))


def _anchor(schema: Any, goal: str, first_number: bool = False,
            producible: Callable[[], bool] = lambda: True) -> Any:
    """`schema` narrowed to the goal's values; `producible()`: whether another offered
    function returns a value that may stand for it (else an enum the goal states none of
    stays whole)."""
    if not isinstance(schema, dict):
        return schema
    enum = schema.get("enum")
    if string_enum(schema):
        named = _in_goal_order(enum, goal)
        if not named and not producible():
            return schema
        return {**schema, "enum": named, DECLARED: schema.get(DECLARED, enum)}
    if enum is None and schema.get("type") in ("number", "integer"):
        numbers = stated_numbers(goal) if first_number else goal_numbers(goal)
        if schema["type"] == "integer":
            numbers = [n for n in numbers if isinstance(n, int)]
        return {**schema, "enum": numbers, DECLARED: None}
    return schema


def _in_goal_order(values: Sequence[str], goal: str) -> list[str]:
    """The `values` the goal names, in the order it names them. Why: where the goal
    states two values of one enum ("100 EUR in USD"), the small model tends to take the
    first value listed for the first such argument; listed in the enum's own order it
    converted from USD (docs/BENCHMARKS.md, stop 39). Positions, not words: any language."""
    at = {v: first_mention(v, goal) for v in values}
    return sorted((v for v in values if at[v] is not None), key=lambda v: at[v])


def _names_a_value(tools: Sequence[ToolSpec], goal: str) -> bool:
    """Whether `goal` names a value some enum argument takes (something to look up)."""
    return any(mentioned(v, goal) for t in tools
               for s in t.parameters.get("properties", {}).values() for v in string_enum(s))


def _producible(schema: Any, tool: ToolSpec, tools: Sequence[ToolSpec]) -> bool:
    """Whether a function of `tools` other than `tool` returns a value that may stand
    for `tool`'s argument `schema` (the grammar's own test, `fits`). `tool` itself does
    not count: the innermost of its calls would still need a value from elsewhere."""
    return any(fits(schema, t.returns, tool.parameters) for t in tools
               if t.qualified_name != tool.qualified_name)


def anchor_to_goal(tools: Sequence[ToolSpec], goal: str) -> list[ToolSpec]:
    """The tools (the ones offered, all of them: each is a possible lookup for the others)
    with every top-level enum argument narrowed to the values `goal` names, and every
    number argument to the goal's numbers and CONSTANTS; when the goal names a value to
    look up, a function's first number argument to the goal's numbers only (else a goal
    naming nothing could get no plan at all: `add(?, ...)` has no base).

    An enum of which the goal names no value is narrowed to none (its value must be
    looked up: a nested call in a tree, a step reference in a step list, an earlier call
    whose result ReAct and tool calling append to `goal`) only when another of `tools`
    returns a value that fits it; else it is left whole, so that no function leaves the
    grammar merely because the goal names its value in words of its own."""
    lookups = _names_a_value(tools, goal)
    out = []
    for tool in tools:
        props = tool.parameters.get("properties", {})
        numbers = [k for k, s in props.items() if isinstance(s, dict) and "enum" not in s
                   and s.get("type") in ("number", "integer")]
        anchored = {k: _anchor(s, goal, first_number=lookups and k == (numbers or [None])[0],
                               producible=lambda s=s, t=tool: _producible(s, t, tools))
                    for k, s in props.items()}
        if anchored == props:
            out.append(tool)
        else:
            out.append(replace(tool, parameters={**tool.parameters, "properties": anchored}))
    return out
