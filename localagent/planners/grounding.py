"""Grounded final answers: the answer may only restate a value that a tool returned.

Why: a 0.5B model in a ReAct or tool-calling loop often states a final answer that no
observation supports (DESIGN.md section 4: "digit soup"). With the `grounded` technique
the grammar of the final answer admits only the values observed so far (every scalar in
every tool result, numbers written as the tool wrote them), plus "yes" and "no" once a
tool returned a boolean. Before any value was observed, a grounded step must call a tool
(except on the last allowed step, where any answer is admitted).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from localagent.constraint import Constraint
from localagent.grammar.jsonlark import lit
from localagent.plan_nodes import path_text

MAX_VALUES = 24
MAX_CHARS = 400


def observed_values(results: Iterable[Any]) -> list[str]:
    """Every scalar in the tool results, as answer text: newest first, unique, bounded;
    a list of names also whole, joined by commas."""
    return list(dict.fromkeys(observed_answers(results).values()))


def observed_answers(results: Iterable[Any], labels: bool = False) -> dict[str, str]:
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
            for n, v in enumerate(value):
                visit(v, (*path, n))
            if bool(value) and all(isinstance(v, str) for v in value):
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
