"""Check functions the shipped suite names as `check: localagent.bench.checks:<name>`.

A check takes (answer, run) where `run` is the run's record (answer, plan, steps, ...) and
returns None/True when the outcome is right, False or a reason when not. They judge the
outcome (what was called, what came back), not the form of the plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from localagent.bench.compare import as_text


def calls_of(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every finished call (function, args, result, error) of a run, for any planner."""
    out: list[dict[str, Any]] = []
    for step in run.get("steps") or []:
        if step.get("kind") == "call_finished":
            out.append(step)
        elif step.get("kind"):  # other executor events (call_started, run_finished...)
            continue
        elif isinstance(step.get("calls"), list):  # a tool-calling turn
            out.extend(step["calls"])
        elif step.get("function"):  # a ReAct step
            out.append(
                {
                    "function": step["function"],
                    "args": step.get("args"),
                    "result": step.get("observation"),
                    "error": step.get("error"),
                }
            )
    return out


def called(run: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The successful calls whose function name starts with `prefix`."""
    return [
        c
        for c in calls_of(run)
        if str(c.get("function", "")).startswith(prefix) and not c.get("error")
    ]


def is_yes(answer: Any, run: Mapping[str, Any]) -> str | None:
    """A yes/true answer, without a no/false in it."""
    if answer is True:
        return None
    text = as_text(answer).lower()
    if re.search(r"\b(yes|true)\b", text) and not re.search(r"\b(no|not|false)\b", text):
        return None
    return f"expected yes/true, got {text[:80]!r}"


def bet_lost(answer: Any, run: Mapping[str, Any]) -> str | None:
    """It did not rain: the weather was looked at and nothing was converted."""
    if not called(run, "WeatherPlugin."):
        return "never looked at the weather"
    converts = called(run, "CurrencyPlugin.ConvertCurrency")
    if converts:
        return f"converted although it did not rain: {converts[0].get('args')}"
    return None


def _cased_text(answer: Any, upper: bool) -> str | None:
    text = as_text(answer).strip()
    if len(re.findall(r"[^\W\d_]", text)) < 3:
        return f"expected a text, got {text[:80]!r}"
    want = text.upper() if upper else text.lower()
    if text != want:
        return f"expected {'UPPER' if upper else 'lower'}case text, got {text[:80]!r}"
    return None


def _via(run: Mapping[str, Any], *functions: str) -> str | None:
    if not any(called(run, f) for f in functions):
        return f"never called {' or '.join(functions)}"
    return None


def uppercase_poem(answer: Any, run: Mapping[str, Any]) -> str | None:
    """A poem (Shakespeare or ShortPoem prompt function) turned to uppercase."""
    return _via(run, "WriterPlugin.Shakespeare", "WriterPlugin.ShortPoem") or _cased_text(
        answer, upper=True
    )


def uppercase_translation(answer: Any, run: Mapping[str, Any]) -> str | None:
    return _via(run, "WriterPlugin.Translate") or _cased_text(answer, upper=True)


def lowercase_summary(answer: Any, run: Mapping[str, Any]) -> str | None:
    return _via(run, "SummarizePlugin.Summarize") or _cased_text(answer, upper=False)


def uppercase_summary(answer: Any, run: Mapping[str, Any]) -> str | None:
    return _via(run, "SummarizePlugin.Summarize") or _cased_text(answer, upper=True)


def uppercase_acronym(answer: Any, run: Mapping[str, Any]) -> str | None:
    """An acronym from the Acronym prompt function, in uppercase."""
    return _via(run, "WriterPlugin.Acronym") or _cased_text(answer, upper=True)


def topics_found(answer: Any, run: Mapping[str, Any]) -> str | None:
    """The Topics prompt function ran and the answer mentions bees or honey."""
    if (why := _via(run, "SummarizePlugin.Topics")) is not None:
        return why
    if not re.search(r"\b(bee|bees|honey|pollinat\w*)\b", as_text(answer), re.IGNORECASE):
        return f"topics do not mention bees or honey: {as_text(answer)[:80]!r}"
    return None
