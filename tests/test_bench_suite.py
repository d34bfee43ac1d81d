"""The suite format and the shipped suite: loading, bad input, and expected answers
recomputed from the plugins' fixed data (not copied from the YAML)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from localagent.bench.compare import load_check
from localagent.bench.suite import load_suite
from localagent.bench.tools import build_registry, pick_distractors
from localagent.errors import UsageError
from localagent.tools.builtins import MathPlugin
from localagent.tools.examples import CurrencyPlugin, DemoPlugin, PersonalAssistant, WeatherPlugin

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "suites" / "core.yaml"
demo, people, money, math_ = DemoPlugin(), PersonalAssistant(), CurrencyPlugin(), MathPlugin()
rain, dry = WeatherPlugin("rain"), WeatherPlugin("dry")
inv, age, conv = demo.get_invoice, people.get_person_age, money.convert_currency


def _if(condition: bool, then: float, otherwise: float) -> float:
    return then if condition else otherwise


# Each numeric task's answer, computed by calling the plugins the way a correct plan would.
DERIVATIONS: dict[str, Callable[[], float]] = {
    "single-invoice-d": lambda: inv("D"),
    "single-age-alice": lambda: age("Alice"),
    "single-temp-madrid": lambda: rain.get_temperature("Madrid"),
    "single-gbp-usd": lambda: conv(50, "GBP", "USD"),
    "single-eur-jpy": lambda: conv(1000, "EUR", "JPY"),
    "single-multiply": lambda: math_.multiply(17, 23),
    "nested-invoice-diff": lambda: demo.diff(
        demo.total(inv("C"), inv("F")), demo.total(inv("A"), inv("E"))
    ),
    "nested-invoice-sum-ac": lambda: demo.total(inv("A"), inv("C")),
    "nested-invoice-d-minus-b": lambda: demo.diff(inv("D"), inv("B")),
    "nested-invoice-sum-bdf": lambda: demo.total(demo.total(inv("B"), inv("D")), inv("F")),
    "nested-furina-power": lambda: math_.power(age("Furina"), 0.43),
    "nested-ages-sum": lambda: math_.add(age("Bob"), age("Marta")),
    "nested-ages-diff": lambda: math_.subtract(age("Marta"), age("Kenji")),
    "nested-invoice-ratio": lambda: math_.divide(inv("C"), inv("E")),
    "nested-age-times-invoice": lambda: math_.multiply(age("Jonas"), inv("B")),
    "nested-invoice-usd": lambda: conv(inv("F"), "EUR", "USD"),
    "cond-bet-rain": lambda: _if(rain.did_it_rain_today("Athens"), conv(100, "EUR", "USD"), 0),
    "cond-rome-warm": lambda: _if(
        rain.get_temperature("Rome") > 20, conv(200, "USD", "EUR"), conv(200, "USD", "GBP")
    ),
    "cond-london-rain": lambda: _if(
        rain.did_it_rain_today("London"), conv(30, "GBP", "CHF"), conv(30, "GBP", "EUR")
    ),
    "cond-bob-city-rain": lambda: _if(
        rain.did_it_rain_today(people.get_person_city("Bob")),
        conv(100, "EUR", "USD"),
        conv(100, "EUR", "GBP"),
    ),
    "cond-bob-city-dry": lambda: _if(
        dry.did_it_rain_today(people.get_person_city("Bob")),
        conv(100, "EUR", "USD"),
        conv(100, "EUR", "GBP"),
    ),
    "filter-invoice-d": lambda: inv("D"),
    "filter-age-alice": lambda: age("Alice"),
    "filter-gbp-usd": lambda: conv(50, "GBP", "USD"),
    "filter-invoice-sum-ac": lambda: demo.total(inv("A"), inv("C")),
    "filter-temp-tokyo": lambda: rain.get_temperature("Tokyo"),
}


def test_shipped_suite_loads_with_every_category() -> None:
    suite = load_suite(SUITE)
    assert len(suite.tasks) >= 30
    categories = {t.category for t in suite.tasks}
    assert categories == {"single", "nested", "conditional", "text", "filter"}
    assert all(
        t.distractors == 40 and t.wants_filter for t in suite.tasks if t.category == "filter"
    )
    for task in suite.tasks:
        for e in task.expect:
            if e.kind == "check":
                assert callable(load_check(e.value))


def test_shipped_numbers_match_the_plugins() -> None:
    suite = load_suite(SUITE)
    numeric = {t.id: t for t in suite.tasks if any(e.kind == "number" for e in t.expect)}
    assert set(numeric) == set(DERIVATIONS)
    for task_id, derive in DERIVATIONS.items():
        (expected,) = [e for e in numeric[task_id].expect if e.kind == "number"]
        allowed = max(expected.options.get("tolerance", 0), 1e-9)
        assert abs(derive() - expected.value) <= allowed, task_id


def test_every_shipped_task_builds_its_registry() -> None:
    for task in load_suite(SUITE).tasks:
        registry = build_registry(task)
        for plugin in task.plugins:
            name = plugin.split(":")[0]
            assert any(n.startswith(name + ".") for n in registry.names()), (task.id, plugin)
        assert len(registry) >= task.distractors


def test_distractors_are_stable_and_fail_when_called() -> None:
    task = next(t for t in load_suite(SUITE).tasks if t.id == "filter-invoice-d")
    first, second = build_registry(task), build_registry(task)
    assert first.names() == second.names()
    own = {n for n in first.names() if n.startswith("DemoPlugin.")}
    assert len(first) - len(own) == 40
    distractor = next(n for n in first.names() if n not in own)
    result = first.invoke(distractor, {})
    assert result.error is not None and "distractor" in result.error.message
    assert pick_distractors("other-id", 40, build_registry(task)) != [
        first.spec(n) for n in sorted(first.names()) if n not in own
    ]


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "tasks:\n  - {id: a, goal: g, plugins: [DemoPlugin], expect: {number: 1}}\n"


def test_json_suite_and_selection(tmp_path: Path) -> None:
    data = {
        "name": "mine",
        "tasks": [
            {"id": "a", "goal": "g", "plugins": ["DemoPlugin"], "expect": {"exact": "x"}},
            {
                "id": "b",
                "goal": "g",
                "plugins": "TextPlugin",
                "expect": [{"contains": ["x", "y"]}, {"regex": "x+"}],
            },
        ],
    }
    suite = load_suite(_write(tmp_path, json.dumps(data), "s.json"))
    assert suite.name == "mine" and [t.id for t in suite.tasks] == ["a", "b"]
    assert suite.tasks[1].plugins == ("TextPlugin",) and len(suite.tasks[1].expect) == 2
    assert [t.id for t in suite.select(["b"]).tasks] == ["b"]
    assert [t.id for t in suite.select(limit=1).tasks] == ["a"]
    with pytest.raises(UsageError, match="unknown task id"):
        suite.select(["zz"])


@pytest.mark.parametrize(
    "text, message",
    [
        ("tasks: []\n", "no tasks"),
        ("nope: 1\n", "'tasks' list"),
        ("tasks: [\n", "invalid YAML"),
        ("tasks:\n  - {id: a, plugins: [X], expect: {number: 1}}\n", "'goal'"),
        ("tasks:\n  - {id: a, goal: g, expect: {number: 1}}\n", "'plugins'"),
        ("tasks:\n  - {id: a, goal: g, plugins: [X]}\n", "'expect' is required"),
        (
            "tasks:\n  - {id: a, goal: g, plugins: [X], expect: {number: 1, exact: 2}}\n",
            "exactly one",
        ),
        ("tasks:\n  - {id: a, goal: g, plugins: [X], expect: {numbr: 1}}\n", "unknown: numbr"),
        ("tasks:\n  - {id: a, goal: g, plugins: [X], expect: {number: x}}\n", "must be numbers"),
        ("tasks:\n  - {id: a, goal: g, plugins: [X], expect: {regex: '('}}\n", "invalid regex"),
        (
            "tasks:\n  - {id: a, goal: g, plugins: [X], expect: {check: nocolon}}\n",
            "module:function",
        ),
        (
            "tasks:\n  - {id: a, goal: g, plugins: [X], expect: {number: 1}, colour: red}\n",
            "unknown key",
        ),
        (
            "tasks:\n  - {id: a, goal: g, plugins: [X], expect: {number: 1}, distractors: -1}\n",
            "distractors",
        ),
        (GOOD + "  - {id: a, goal: h, plugins: [X], expect: {number: 2}}\n", "duplicate task id"),
    ],
)
def test_bad_suites_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_suite(_write(tmp_path, text))


def test_missing_suite_and_unknown_plugin(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_suite(tmp_path / "none.yaml")
    suite = load_suite(_write(tmp_path, GOOD.replace("DemoPlugin", "NoSuchPlugin")))
    with pytest.raises(UsageError):
        build_registry(suite.tasks[0])
