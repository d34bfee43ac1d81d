"""Property tests of the calculator (`localagent.tools.calculator`) with hostile input.

The property: whatever text a model sends, `calculate` returns a finite number within the
calculator's bounds or raises `CalculatorError` (a `LocalAgentError`), never another
exception, a hang or an unbounded allocation. The examples that found bugs are kept as
`@example`s. Examples per test: the hypothesis profile (tests/conftest.py, "ci").
"""

from __future__ import annotations

import math
import tracemalloc

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from localagent.errors import CalculatorError, LocalAgentError
from localagent.tools.calculator import (
    MAX_LENGTH,
    MAX_LOG10,
    calculate,
    power_bounded,
)

HOSTILE = [
    "9**9**9",
    "9**9**9**9",
    "1e308*10",
    "1e308+1e308",
    "-1e308*10",
    "10**300*10**300",
    "2**1000*2**1000",
    "(2**999)/1e-300",
    "1e300//1e-300",
    "1e300%1e-300",
    "(" * 199 + "1" + ")" * 199,
    "(" * 500 + "1" + ")" * 500,
    "-" * 999 + "1",
    "+-" * 499 + "1",
    "1+" * 499 + "1",
    "1" * MAX_LENGTH,
    "1" * (MAX_LENGTH + 1),
    "9" * 400 + "*" + "9" * 400,
    "sqrt(" * 150 + "2" + ")" * 150,
    "exp(1000)",
    "exp(exp(exp(10)))",
    "log(10, 1)",
    "log(1, 1)",
    "log(0)",
    "log(-1)",
    "log(10, 0)",
    "log(10, -1)",
    "sqrt(-1)",
    "(-8)**(1/3)",
    "0**-1",
    "0.0**-1.5",
    "(-1)**(2**999)",
    "1**(2**999)",
    "2**-(2**999)",
    "0.5**(10**300)",
    "round(1e300)",
    "round(1e300, -100)",
    "round(2.5, 1.5)",
    "round(1, 10**300)",
    "floor(1e300)*floor(1e300)",
    "ceil(-1e300)",
    "min(" + ",".join(["1"] * 21) + ")",
    "max()",
    "min(1)",
    "abs(-1e308*10)",
    "tan(pi/2)",
    "1/0",
    "1//0",
    "1%0",
    "1.0%0.0",
    "nan",
    "inf",
    "1e999",
    "-1e999",
    "1j",
    "2^3",
    "__import__('os')",
    "().__class__",
    "[1]*10**9",
    "'a'*10**9",
    "lambda: 1",
    "(x:=1)",
    "1 if 1 else 2",
    "1<2",
    "\x00",
    "1\x00",
    "\ufeff1+1",
    "１+１",
    "٣+٤",
    "1_000_000**1_000",
    "0x10**0x100",
    "1e-400",
    "pi**pi**pi**pi",
    "e**709",
    "e**710",
    "10.0**300",
    "10.0**301",
    "-(10**301)",
    "sqrt(10**600)",
]


def _within_bounds(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) <= 10.0**MAX_LOG10
    return value.bit_length() <= 1000


def _assert_typed(expression: object) -> None:
    """The property: a bounded number, or CalculatorError; nothing else escapes."""
    try:
        value = calculate(expression)  # type: ignore[arg-type]
    except CalculatorError as exc:
        assert isinstance(exc, LocalAgentError)
        assert exc.one_line()  # a one-line message the CLI can print
        return
    assert _within_bounds(value), (expression, value)


_NUMBERS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["9", "99", "1e308", "1e-308", "0", "0.0", "2", "1e300", "10**300",
                     "pi", "e", "nan", "inf", "1_0", "0x1f", "1e", ".5", "5."]),
)
_OPERATORS = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "^", "<", "&", "@", ","])
_FUNCTIONS = st.sampled_from(["sqrt", "abs", "round", "floor", "ceil", "exp", "log", "log10",
                              "sin", "cos", "tan", "min", "max", "open", "eval", "pow"])


def _expressions() -> st.SearchStrategy[str]:
    """Arithmetic-looking text: numbers joined by operators, nested calls and parentheses."""
    return st.recursive(
        _NUMBERS,
        lambda inner: st.one_of(
            st.tuples(inner, _OPERATORS, inner).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
            inner.map(lambda x: f"({x})"),
            st.tuples(st.sampled_from(["-", "+", "--", "not "]), inner).map("".join),
            st.tuples(_FUNCTIONS, st.lists(inner, max_size=4)).map(
                lambda t: f"{t[0]}({', '.join(t[1])})"),
        ),
        max_leaves=40,
    )


@example("log(10, 1)")  # found: ZeroDivisionError escaped from math.log with base 1
@example("log(1, 1)")
@given(_expressions())
def test_arithmetic_looking_text_gives_a_number_or_a_calculator_error(expression: str) -> None:
    _assert_typed(expression)


@given(st.text(max_size=MAX_LENGTH + 50))
def test_any_text_gives_a_number_or_a_calculator_error(expression: str) -> None:
    _assert_typed(expression)


@given(st.one_of(st.none(), st.integers(), st.floats(), st.lists(st.text(max_size=3)),
                 st.binary(max_size=10)))
def test_a_non_string_is_refused_with_a_calculator_error(expression: object) -> None:
    with pytest.raises(CalculatorError):
        calculate(expression)  # type: ignore[arg-type]


@given(st.integers(min_value=1, max_value=3000), st.sampled_from(["(", "-", "sqrt(", "+-",
                                                                     "abs(", "1+", "2**"]))
def test_deep_nesting_and_long_chains_are_refused_or_bounded(depth: int, opener: str) -> None:
    closer = ")" if opener.endswith("(") else ""
    _assert_typed(opener * depth + "2" + closer * depth)


_BOUNDED_NUMBERS = st.one_of(
    st.integers(min_value=-(2**900), max_value=2**900),
    st.floats(allow_nan=True, allow_infinity=True),
)


@example(10, 301)
@example(-1, 2**900)
@example(0.5, -(2**900))
@given(_BOUNDED_NUMBERS, _BOUNDED_NUMBERS)
def test_power_bounded_gives_a_bounded_number_or_a_calculator_error(base: float,
                                                                    exponent: float) -> None:
    try:
        value = power_bounded(base, exponent)
    except CalculatorError:
        return
    assert _within_bounds(value), (base, exponent, value)


@pytest.mark.parametrize("expression", HOSTILE)
def test_hostile_expressions_stay_small_in_memory(expression: str) -> None:
    """No hostile expression allocates more than a few megabytes on its way to an answer
    or a CalculatorError (traced allocations, not time: nothing here is timed)."""
    tracemalloc.start()
    try:
        _assert_typed(expression)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"{expression[:40]!r} peaked at {peak} bytes"
