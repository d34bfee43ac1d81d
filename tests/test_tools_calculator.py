"""The safe calculator, against ordinary arithmetic and hostile input; built-in plugins."""

from __future__ import annotations

import math

import pytest

from localagent.errors import CalculatorError
from localagent.tools.calculator import MAX_LENGTH, calculate
from localagent.tools.registry import default_registry


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("16**0.43", 16**0.43),
        ("(2000 + 1500) * 0.2", 700),
        ("2 ** 10", 1024),
        ("-3 + +4", 1),
        ("7 // 2 + 7 % 2", 4),
        ("10 / 4", 2.5),
        ("sqrt(16) + abs(-2) + round(2.567, 2)", 6 + 2.57),
        ("2 * pi", 2 * math.pi),
        ("max(1, 5, 3) - min(4, 2)", 3),
        ("0 ** 0", 1),
        ("1_000 + 0x10", 1016),
        ("2 ** -2", 0.25),
        ("1 ** 10000000000", 1),
        ("+".join(["1"] * 150), 150),
    ],
)
def test_arithmetic(expression: str, expected: float) -> None:
    assert calculate(expression) == pytest.approx(expected)


def test_whole_results_are_ints() -> None:
    assert calculate("3500.0") == 3500 and isinstance(calculate("3500.0"), int)
    assert isinstance(calculate("16**0.43"), float)


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("9**9**9**9", "too large"),
        ("10**400", "too large"),
        ("2.0**5000", "too large"),
        ("0.5**-5000", "too large"),
        ("(10**300) * (10**300)", "too large"),
        ("1e308 * 10", "too large"),
        ("__import__('os')", "not allowed"),
        ("__import__('os').system('echo hi')", "not allowed"),
        ("(1).__class__", "attribute access"),
        ("x + 1", "the name x"),
        ("(lambda: 1)()", "not allowed"),
        ("[1, 2][0]", "not allowed"),
        ("'a' * 3", "not a number"),
        ("True + 1", "not a number"),
        ("1j * 1j", "not a number"),
        ("1 if 1 else 2", "not allowed"),
        ("open('/etc/passwd')", "function open is not allowed"),
        ("sqrt(x=4)", "positional"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("(-8) ** (1/3)", "not a real number"),
        ("sqrt(-1)", "math domain"),
        ("2 ^ 3", "write **"),
        ("1 +", "not an arithmetic expression"),
        ("", "empty"),
        ("1 < 2", "comparison"),
        ("-" * 500 + "1", "nested too deeply"),
        ("(" * 300 + "1" + ")" * 300, "not an arithmetic expression"),
        ("1\x00", "not an arithmetic expression"),
        ("round(1.5, 10**6)", "round"),
    ],
)
def test_hostile_or_non_arithmetic_input_is_rejected(expression: str, needle: str) -> None:
    with pytest.raises(CalculatorError) as info:
        calculate(expression)
    assert needle in str(info.value)


def test_a_huge_string_is_rejected_before_parsing() -> None:
    huge = "1+" * 5_000_000 + "1"  # ~10 MB: parsing this would take seconds and much memory
    with pytest.raises(CalculatorError, match=f"at most {MAX_LENGTH}"):
        calculate(huge)
    with pytest.raises(CalculatorError, match="as text"):
        calculate(12)  # type: ignore[arg-type]


def test_calculator_and_math_plugin_through_the_registry() -> None:
    registry = default_registry(examples=False)
    ok = registry.invoke("MathPlugin.Calculator", {"expression": "16**0.43"})
    assert ok.value == pytest.approx(3.2943640690702924)
    bad = registry.invoke("MathPlugin.Calculator", {"expression": "__import__('os')"})
    assert bad.error is not None and bad.error.kind == "exception"
    assert isinstance(bad.error.exception, CalculatorError)
    huge = registry.invoke("MathPlugin.power", {"base": 9, "exponent": 9**9})
    assert huge.error is not None and "too large" in huge.error.message
    assert registry.invoke("MathPlugin.add", {"value1": "2000", "value2": 1500}).value == 3500
    assert registry.invoke("MathPlugin.divide", {"value1": 1, "value2": 4}).value == 0.25
    zero = registry.invoke("MathPlugin.divide", {"value1": 1, "value2": 0})
    assert zero.error is not None and "divide by zero" in zero.error.message
    assert registry.invoke("MathPlugin.sqrt", {"value": 2}).value == pytest.approx(math.sqrt(2))


def test_text_and_time_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = default_registry(examples=False)
    assert registry.invoke("TextPlugin.uppercase", {"input": "Hi"}).value == "HI"
    assert registry.invoke("TextPlugin.lowercase", {"input": "Hi"}).value == "hi"
    assert registry.invoke("TextPlugin.trim", {"input": "  a  "}).value == "a"
    assert registry.invoke("TextPlugin.trim_start", {"input": "  a  "}).value == "a  "
    assert registry.invoke("TextPlugin.trim_end", {"input": "  a  "}).value == "  a"
    assert registry.invoke("TextPlugin.concat", {"input": "a", "input2": "b"}).value == "ab"
    monkeypatch.setenv("LOCALAGENT_TODAY", "2025-02-27")
    assert registry.invoke("TimePlugin.today", {}).value == "2025-02-27"
    assert registry.invoke("TimePlugin.now", {}).value.startswith("2025-02-27T")
    assert registry.invoke("TimePlugin.add_days", {"days": "2"}).value == "2025-03-01"
    assert (
        registry.invoke("TimePlugin.add_days", {"days": -1, "date": "2024-03-01"}).value
        == "2024-02-29"
    )


def test_example_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = default_registry(examples=True)
    invoices = [registry.invoke("DemoPlugin.GetInvoice", {"company": c}).value for c in "ABCDEF"]
    assert invoices == [2000, 1500, 20000, 6700, 1000, 4100]
    assert registry.invoke("DemoPlugin.Diff", {"value1": 20000, "value2": 1500}).value == 18500
    assert registry.invoke("DemoPlugin.Total", {"value1": 2000, "value2": 1500}).value == 3500
    age = registry.invoke("PersonalAssistant.GetPersonAge", {"name": "Furina"}).value
    assert registry.invoke(
        "MathPlugin.Calculator", {"expression": f"{age}**0.43"}
    ).value == pytest.approx(3.2944, abs=1e-4)
    unknown = registry.invoke("PersonalAssistant.GetPerson", {"name": "Zed"})
    assert unknown.error is not None and "Furina" in unknown.error.message
    assert (
        registry.invoke(
            "CurrencyPlugin.ConvertCurrency",
            {"amount": 100, "from_currency": "EUR", "to_currency": "USD"},
        ).value
        == 108.0
    )
    monkeypatch.setenv("LOCALAGENT_WEATHER", "rain")
    assert registry.invoke("WeatherPlugin.DidItRainToday", {"city": "Athens"}).value is True
    monkeypatch.setenv("LOCALAGENT_WEATHER", "dry")
    assert registry.invoke("WeatherPlugin.DidItRainToday", {"city": "athens"}).value is False
    weather = registry.invoke("WeatherPlugin.GetWeather", {"city": "Athens"}).value
    assert weather["condition"] == "sunny" and weather["precipitation_mm"] == 0
