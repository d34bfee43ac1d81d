"""Grounded final answers: the answer may only restate a value that a tool returned.

Why: a 0.5B model in a ReAct or tool-calling loop often states a final answer that no
observation supports (DESIGN.md section 4: "digit soup"). With the `grounded` technique
the grammar of the final answer admits only the values observed so far (every scalar in
every tool result, numbers written as the tool wrote them), plus "yes" and "no" once a
tool returned a boolean. A goal that asks for free text (write, translate, summarise...)
is exempt: its answer is prose, not a value. Before any value was observed, a grounded
step must call a tool (except on the last allowed step, where any answer is admitted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from localagent.constraint import Constraint
from localagent.grammar.jsonlark import lit
from localagent.plan_nodes import path_text
from localagent.planners.mentions import stated_numbers

MAX_VALUES = 24
MAX_CHARS = 400
_FREE_TEXT = re.compile(
    r"\b(write|compose|draft|summari[sz]e|describe|explain|translate|rewrite|poems?|stor(y|ies)"
    r"|essay|letter|email|tell me about)\b", re.IGNORECASE)


def asks_for_text(goal: str) -> bool:
    """Whether the goal's answer is prose rather than a value (then answers are free)."""
    return bool(_FREE_TEXT.search(goal))


def observed_values(results: Iterable[Any], whole_lists: bool = False) -> list[str]:
    """Every scalar in the tool results, as answer text: newest first, unique, bounded.
    `whole_lists` (the `result` technique): a list of names is offered only whole, joined
    by commas (seen: one book of the three a list goal asked for, given as the answer)."""
    return list(dict.fromkeys(observed_answers(results, whole_lists).values()))


def observed_answers(results: Iterable[Any], whole_lists: bool = False,
                     labels: bool = False) -> dict[str, str]:
    """`observed_values` as the texts an answer is written as, each with the value it
    states. With `labels`, a scalar inside an object or list result is written after its
    path in that result (`total: 42.5`, `items[0].price: 2.5`), and stands for the value
    (`42.5`); a result that is itself a scalar, "yes" and "no" stay bare. At most
    MAX_VALUES distinct values, each under every path it was seen at (bounded too).

    Why `labels`: under a choice of bare values the model's first token decides, and a
    digit says nothing about which field it is. Asked "How much was order 17?" after
    seeing the order, the default model began with "2" (log-probability -13.39) rather
    than "4" (-13.69, shared by 42.5 and 40.0) and answered an item's price, 2.5; with the
    paths in front, its first token was the key, `total` (-16.0, the next best -19.0)."""
    out: dict[str, str] = {}
    values: dict[str, None] = {}
    booleans = False

    def offer(path: tuple[str | int, ...], text: str) -> None:
        if text not in values and len(values) >= MAX_VALUES:
            return
        values[text] = None
        shown = f"{path_text(path, lead=False)}: {text}" if labels and path else text
        if len(out) < 2 * MAX_VALUES:
            out.setdefault(shown, text)

    def visit(value: Any, path: tuple[str | int, ...]) -> None:
        nonlocal booleans
        if isinstance(value, bool):
            booleans = True
            offer(path, json.dumps(value))
        elif isinstance(value, (int, float)):
            offer(path, json.dumps(value))
        elif isinstance(value, str):
            text = " ".join(value.split())
            if text and len(text) <= MAX_CHARS:
                offer(path, text)
        elif isinstance(value, dict):
            for k, v in value.items():
                visit(v, (*path, str(k)))
        elif isinstance(value, (list, tuple)):
            names = bool(value) and all(isinstance(v, str) for v in value)
            if not (whole_lists and names):
                for n, v in enumerate(value):
                    visit(v, (*path, n))
            if names:
                offer(path, ", ".join(value))

    for result in reversed(list(results)):
        visit(result, ())
    if booleans:
        out.update({"yes": "yes", "no": "no"})
    return out


def answer_choice(values: list[str], name: str = "grounded-answer") -> Constraint:
    """A constraint admitting exactly one of `values` (a tool-calling turn's answer)."""
    return Constraint(kind="lark", source="start: " + " | ".join(lit(v) for v in values),
                      name=name)


def _scalars(value: Any) -> set[str]:
    """The scalars of a value, compared loosely: text stripped and lower-cased, numbers as
    floats (a result of 430 passed on as 430.0 is the same value)."""
    if isinstance(value, bool):
        return set()
    if isinstance(value, (int, float)):
        return {repr(float(value))}
    if isinstance(value, str):
        text = " ".join(value.split()).lower()
        return {text} if text else set()
    if isinstance(value, dict):
        return set().union(*(_scalars(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(_scalars(v) for v in value)) if value else set()
    return set()


def _numbers_in_text(args: dict[str, Any]) -> set[str]:
    """The numbers written inside text arguments (`{"expression": "16**0.43"}` uses 16)."""
    return {repr(float(n)) for v in args.values() if isinstance(v, str)
            for n in stated_numbers(v)}


def unused_results(calls: Sequence[tuple[int, str, dict[str, Any], Any]],
                   prefer: Collection[str] = ()) -> list[Any]:
    """The results (in call order) that no call of a later turn took as an argument:
    what the calls so far arrived at, not the steps on the way; of those, the results of
    the functions in `prefer` (`head`'s: what the question asks for) in the latest turn
    that called one, if any. `calls`:
    (turn, function, arguments, result) of every call that worked.

    Why (the `result` technique): with every observed value admitted, the default model
    answered "How many more pages does book X have than book Y?" with 189, a looked-up
    page count, after `subtract(430, 189)` had returned 241. A value counts from the first
    turn that produced it, so a lookup repeated after the subtraction does not make its
    page count an answer again. Seen for `prefer`: asked which of two teams has more
    points, it answered with one team's points, looked up in the same turn as the picker
    function's answer (the team's name). A number written in a text argument counts as
    taken (seen: a looked-up age, 16, given as the answer after `Calculator("16**0.43")`).
    """
    keys = [json.dumps(value, sort_keys=True, default=str) for _, _, _, value in calls]
    first: dict[str, int] = {}
    for (turn, _, _, _), key in zip(calls, keys):
        first.setdefault(key, turn)
    taken = [(turn, _scalars(args) | _numbers_in_text(args)) for turn, _, args, _ in calls]
    out: list[tuple[int, str, Any]] = []
    for (at, function, _, value), key in zip(calls, keys):
        since = first[key]
        mine = _scalars(value)
        if not any(turn > since and mine & used for turn, used in taken):
            out.append((at, function, value))
    heads = [(at, v) for at, f, v in out if f in prefer]
    if heads:  # the latest turn's: seen, a lookup of X, one of Y, then of Y again
        latest = max(at for at, _ in heads)
        return [v for at, v in heads if at == latest]
    return [v for _, _, v in out]


def grounded_answers(values: Sequence[Any], trail: Sequence[tuple[int, str, dict[str, Any], Any]],
                     prefer: Collection[str] = (), result: bool = False) -> list[str]:
    """The texts a grounded answer may restate, from the observed `values`; with `result`,
    of those only the `unused_results` of `trail` (if any remain), and a list only whole."""
    return list(dict.fromkeys(labelled_answers(values, trail, prefer, result).values()))


def labelled_answers(values: Sequence[Any],
                     trail: Sequence[tuple[int, str, dict[str, Any], Any]],
                     prefer: Collection[str] = (), result: bool = False,
                     labels: bool = False) -> dict[str, str]:
    """`grounded_answers` as `observed_answers` writes them: each text an answer may be
    written as, with the value it states (`labels`: parts of objects after their path)."""
    if not result:
        return observed_answers(values, labels=labels)
    unused = unused_results(trail, prefer)
    return observed_answers([v for v in values if v in unused] or values, whole_lists=True,
                            labels=labels)
