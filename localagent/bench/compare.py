"""Comparators: does a run's answer meet a task's expectations?

Each returns None when the expectation holds, else a short reason (kept in the results, so
a failure can be read without re-running). Answers may be numbers, strings or JSON values:
ReAct and tool-calling planners answer in text ("The total is 21,100."), tree and sequential
planners return the executed value, so `number` reads numbers out of text.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from localagent.bench.suite import Expectation, Task
from localagent.errors import UsageError

_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
CheckFunction = Callable[[Any, Mapping[str, Any]], Any]


def judge(task: Task, answer: Any, run: Mapping[str, Any]) -> str | None:
    """None when every expectation of `task` holds, else the reasons joined by '; '.
    A run without an answer fails, unless the task expects it to decline (`declined`)."""
    if answer is None and not task.declines:
        return f"no answer ({run.get('error') or 'none given'})"
    reasons = [r for e in task.expect if (r := compare(e, answer, run)) is not None]
    return "; ".join(reasons) if reasons else None


def compare(expectation: Expectation, answer: Any, run: Mapping[str, Any]) -> str | None:
    kind, value, opts = expectation.kind, expectation.value, expectation.options
    if kind == "exact":
        return _exact(value, answer)
    if kind == "number":
        return _number(
            value, answer, float(opts.get("tolerance", 0)), float(opts.get("rel_tolerance", 0))
        )
    if kind == "contains":
        return _contains(value, answer, bool(opts.get("case_sensitive", False)))
    if kind == "regex":
        return _regex(value, answer, str(opts.get("flags", "")))
    if kind == "declined":
        return declined(answer)
    return _check(value, answer, run)


def declined(answer: Any) -> str | None:
    """The `declined: true` expectation: no offered tool can answer the goal, so the run
    is right only when it ends without an answer (answer None; why it stopped, if
    anything says so, is in the run's `error`). Any answer, even one saying that no tool
    fits, is wrong: the planners answer a value or nothing."""
    if answer is None:
        return None
    return f"answered {as_text(answer)[:80]!r} although no offered tool fits the goal"


def as_text(answer: Any) -> str:
    """The answer as text: strings as they are, everything else as JSON."""
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, ensure_ascii=False, default=str)


def numbers_in(answer: Any) -> list[float]:
    """Every number in the answer: the answer itself when numeric, else those in its text
    (thousands separators allowed: "21,100" is 21100)."""
    if isinstance(answer, bool):
        return []
    if isinstance(answer, (int, float)):
        return [float(answer)] if math.isfinite(answer) else []
    return [float(m.replace(",", "")) for m in _NUMBER.findall(as_text(answer))]


def _exact(expected: Any, answer: Any) -> str | None:
    if isinstance(expected, str):
        ok = as_text(answer).strip() == expected.strip()
    elif isinstance(expected, bool):  # true also matches the text "true"
        ok = answer is expected or as_text(answer).strip().lower() == str(expected).lower()
    else:  # numbers and JSON values compare by value; True is not 1
        ok = answer == expected and not isinstance(answer, bool)
    return None if ok else f"expected exactly {expected!r}, got {_short(answer)}"


def _number(expected: float, answer: Any, tolerance: float, rel: float) -> str | None:
    allowed = max(tolerance, rel * abs(expected))
    found = numbers_in(answer)
    if any(abs(n - expected) <= allowed for n in found):
        return None
    if not found:
        return f"expected the number {expected:g}, no number in {_short(answer)}"
    return f"expected {expected:g} (±{allowed:g}), got {_short(answer)}"


def _contains(expected: str | list[str], answer: Any, case_sensitive: bool) -> str | None:
    parts = expected if isinstance(expected, list) else [expected]
    text = as_text(answer)
    if not case_sensitive:
        text, parts = text.lower(), [p.lower() for p in parts]
    missing = [p for p in parts if p not in text]
    return None if not missing else f"{_short(answer)} lacks {', '.join(map(repr, missing))}"


def _regex(pattern: str, answer: Any, flags: str) -> str | None:
    bits = 0
    for letter in flags:
        bits |= {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}.get(letter, 0)
    if re.search(pattern, as_text(answer), bits):
        return None
    return f"{_short(answer)} does not match /{pattern}/{flags}"


def load_check(reference: str) -> CheckFunction:
    """The function named by "module:function"; UsageError when it cannot be found."""
    module_name, _, func_name = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"check {reference!r}: cannot import {module_name}: {exc}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise UsageError(f"check {reference!r}: {module_name} has no function {func_name}")
    return func  # type: ignore[no-any-return]


def _check(reference: str, answer: Any, run: Mapping[str, Any]) -> str | None:
    """A check returns True/None (holds), False (does not) or a string (why not)."""
    outcome = load_check(reference)(answer, run)
    if outcome is True or outcome is None:
        return None
    if outcome is False:
        return f"{reference} rejected {_short(answer)}"
    return str(outcome)


def _short(answer: Any, limit: int = 80) -> str:
    text = as_text(answer)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
