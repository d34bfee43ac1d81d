"""Every comparator, passing and failing, and the shipped check functions."""

from __future__ import annotations

from typing import Any

import pytest

from localagent.bench import checks
from localagent.bench.compare import compare, judge, load_check, numbers_in
from localagent.bench.suite import Expectation, Task
from localagent.errors import UsageError


def E(kind: str, value: Any, **options: Any) -> Expectation:
    return Expectation(kind, value, options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "expectation, answer",
    [
        (E("exact", "HELLO WORLD"), "HELLO WORLD"),
        (E("exact", "HELLO WORLD"), "  HELLO WORLD\n"),
        (E("exact", 6700), 6700),
        (E("exact", 6700), 6700.0),
        (E("exact", True), True),
        (E("exact", True), "true"),
        (E("exact", [1, 2]), [1, 2]),
        (E("number", 21100), 21100),
        (E("number", 21100), "The difference is 21,100."),
        (E("number", 3.2944, tolerance=0.001), 3.2943640690702924),
        (E("number", 3.2944, tolerance=0.001), "about 3.294 I think"),
        (E("number", -2), "It is -2.0 degrees"),
        (E("number", 1000, rel_tolerance=0.01), 1009),
        (E("number", 161194.03, tolerance=0.5), "161194.02985"),
        (E("contains", "Tokyo"), "Kenji lives in tokyo."),
        (E("contains", ["buenos", "amigos"]), "BUENOS DIAS, AMIGOS"),
        (E("contains", "Tokyo", case_sensitive=True), "Tokyo"),
        (E("regex", r"^[A-Z ]+$"), "LOCAL AGENTS"),
        (E("regex", r"buen[oa]s", flags="i"), "BUENAS"),
        (E("regex", r"\"city\": \"Paris\""), {"city": "Paris"}),
    ],
)
def test_comparators_accept(expectation: Expectation, answer: Any) -> None:
    assert compare(expectation, answer, {}) is None


@pytest.mark.parametrize(
    "expectation, answer, reason",
    [
        (E("exact", "HELLO WORLD"), "hello world", "expected exactly"),
        (E("exact", 1), True, "expected exactly"),
        (E("exact", True), 1, "expected exactly"),
        (E("number", 6700), 6688, "expected 6700"),
        (E("number", 6700), "no digits here", "no number"),
        (E("number", 1), True, "no number"),
        (E("number", 3.2944, tolerance=0.001), 3.3, "expected 3.2944"),
        (E("number", 1000, rel_tolerance=0.001), 1009, "expected 1000"),
        (E("contains", "Tokyo"), "Kenji lives in Paris", "lacks 'tokyo'"),
        (E("contains", ["buenos", "amigos"]), "BUENOS DIAS", "lacks 'amigos'"),
        (E("contains", "Tokyo", case_sensitive=True), "tokyo", "lacks 'Tokyo'"),
        (E("regex", r"^[A-Z ]+$"), "Local agents", "does not match"),
        (E("regex", r"buen[oa]s"), "BUENAS", "does not match"),
    ],
)
def test_comparators_reject(expectation: Expectation, answer: Any, reason: str) -> None:
    why = compare(expectation, answer, {})
    assert why is not None and reason in why


def test_numbers_in_reads_text_and_values() -> None:
    assert numbers_in(42) == [42.0]
    assert numbers_in("from 1,500 to 20,000.5 and -3") == [1500.0, 20000.5, -3.0]
    assert numbers_in(float("nan")) == [] and numbers_in(None) == []
    assert numbers_in({"v": 2.5}) == [2.5]


def _task(*expect: Expectation) -> Task:
    return Task(id="t", goal="g", plugins=("DemoPlugin",), expect=expect)


def test_judge_needs_an_answer_and_every_expectation() -> None:
    task = _task(E("number", 108, tolerance=0.01), E("contains", "USD"))
    assert judge(task, "108.0 USD", {}) is None
    assert "lacks 'usd'" in (judge(task, 108.0, {}) or "")
    assert judge(task, None, {"error": "no final answer within 5 iterations"}) == (
        "no answer (no final answer within 5 iterations)"
    )


def _check_true(answer: Any, run: Any) -> bool:
    return answer == "yes"


def test_check_functions_by_reference() -> None:
    ref = f"{__name__}:_check_true"
    assert compare(E("check", ref), "yes", {}) is None
    assert "rejected" in (compare(E("check", ref), "no", {}) or "")
    with pytest.raises(UsageError, match="cannot import"):
        load_check("no_such_module_xyz:f")
    with pytest.raises(UsageError, match="has no function"):
        load_check("localagent.bench.checks:nope")


def _tree_run(*calls: tuple[str, Any]) -> dict[str, Any]:
    return {
        "steps": [
            {"kind": "call_finished", "function": f, "args": {}, "result": r, "error": None}
            for f, r in calls
        ]
    }


def test_shipped_checks() -> None:
    assert checks.is_yes(True, {}) is None and checks.is_yes("Yes, it rained.", {}) is None
    assert checks.is_yes("No, it did not rain", {}) is not None
    assert checks.is_yes(False, {}) is not None
    looked = _tree_run(("WeatherPlugin.DidItRainToday", False))
    assert checks.bet_lost("You lost the bet.", looked) is None
    converted = _tree_run(
        ("WeatherPlugin.DidItRainToday", False), ("CurrencyPlugin.ConvertCurrency", 108.0)
    )
    assert "converted although" in (checks.bet_lost("108 USD", converted) or "")
    assert "never looked" in (checks.bet_lost("0", _tree_run()) or "")
    poem = _tree_run(("WriterPlugin.Shakespeare", "o love"), ("TextPlugin.uppercase", "O LOVE"))
    assert checks.uppercase_poem("O LOVE, THOU ART", poem) is None
    assert "UPPERcase" in (checks.uppercase_poem("O love", poem) or "")
    assert "never called" in (checks.uppercase_poem("O LOVE", _tree_run()) or "")
    summary = {
        "steps": [
            {
                "calls": [
                    {"function": "SummarizePlugin.Summarize", "args": {}, "result": "Bees matter."}
                ],
                "answer": None,
            }
        ]
    }
    assert checks.lowercase_summary("bees matter.", summary) is None
    assert checks.lowercase_summary("Bees matter.", summary) is not None
    react = {
        "steps": [
            {
                "thought": "t",
                "function": "WriterPlugin.Acronym",
                "args": {},
                "observation": "RSR: Robot Sorting Recycling",
            }
        ]
    }
    assert checks.uppercase_acronym("RSR: ROBOT SORTING RECYCLING", react) is None
    failed = {
        "steps": [{"thought": "t", "function": "WriterPlugin.Acronym", "args": {}, "error": "boom"}]
    }
    assert checks.uppercase_acronym("RSR", failed) is not None
