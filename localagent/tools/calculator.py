"""A safe arithmetic evaluator: walks a Python `ast` of the expression, never `eval`.

Everything a hostile or confused model could send is bounded before any work is done:
the length is checked before parsing (a 10 MB string is rejected at once), nesting depth
while walking, and every power by its logarithm before it is computed (`9**9**9**9` is
rejected in microseconds, not after exhausting memory). Only numbers, `+ - * / // % **`,
unary signs, parentheses, the constants `pi`/`e` and a few math functions are allowed.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

from localagent.errors import CalculatorError

MAX_LENGTH = 1000
MAX_DEPTH = 200
MAX_LOG10 = 300  # results beyond 1e300 in magnitude are refused
_MAX_INT_BITS = 1000  # ~1e301

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {  # name -> (function, min, max args)
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (round, 1, 2),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "exp": (math.exp, 1, 1),
    "log": (math.log, 1, 2),
    "log10": (math.log10, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "min": (min, 1, 20),
    "max": (max, 1, 20),
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def calculate(expression: str) -> Number:
    """Evaluate an arithmetic expression such as `16**0.43` or `(2000 + 1500) * 0.2`."""
    if not isinstance(expression, str):
        raise CalculatorError(f"expected an expression as text, got {type(expression).__name__}")
    if len(expression) > MAX_LENGTH:
        raise CalculatorError(
            f"expression too long: {len(expression)} characters (at most {MAX_LENGTH})"
        )
    text = expression.strip()
    if not text:
        raise CalculatorError("empty expression")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        detail = getattr(exc, "msg", None) or type(exc).__name__
        raise CalculatorError(f"not an arithmetic expression: {text[:80]!r} ({detail})") from None
    return tidy(_eval(tree.body, 0))


def _eval(node: ast.AST, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise CalculatorError(f"expression nested too deeply (more than {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalculatorError(f"not a number: {value!r}")
        return _checked(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _eval(node.operand, depth + 1)
        return operand if isinstance(node.op, ast.UAdd) else -operand
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, depth + 1)
        right = _eval(node.right, depth + 1)
        return _checked(_binary(node.op, left, right))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call):
        return _checked(_call(node, depth))
    raise CalculatorError(f"not arithmetic: {_shown(node)} is not allowed")


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Pow):
        return _power(left, right)
    if isinstance(op, ast.BitXor):
        raise CalculatorError("'^' is not a power here: write ** (2**3)")
    func = _BINARY.get(type(op))
    if func is None:
        raise CalculatorError(f"not arithmetic: the operator {type(op).__name__} is not allowed")
    try:
        return func(left, right)
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("result too large") from None


def power_bounded(base: Number, exponent: Number) -> Number:
    """`base ** exponent`, refused when the result's magnitude would exceed 1e300."""
    return tidy(_checked(_power(base, exponent)))


def _power(base: Number, exponent: Number) -> Number:
    if base == 0:
        if exponent < 0:
            raise CalculatorError("division by zero (0 raised to a negative power)")
        return 0 if exponent > 0 else 1
    magnitude = abs(base)
    if magnitude != 1 and exponent * math.log10(magnitude) > MAX_LOG10:
        raise CalculatorError(
            f"result too large: {_short(base)}**{_short(exponent)} exceeds 1e{MAX_LOG10}"
        )
    if base < 0 and isinstance(exponent, float) and not exponent.is_integer():
        raise CalculatorError("a negative number raised to a fractional power is not a real number")
    try:
        result = base**exponent
    except (OverflowError, ZeroDivisionError) as exc:
        raise CalculatorError(
            f"cannot compute {_short(base)}**{_short(exponent)} ({exc})"
        ) from None
    if isinstance(result, complex):
        raise CalculatorError("the result is not a real number")
    return result


def _call(node: ast.Call, depth: int) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
        name = node.func.id if isinstance(node.func, ast.Name) else _shown(node.func)
        allowed = ", ".join(sorted(_FUNCTIONS))
        raise CalculatorError(
            f"not arithmetic: function {name} is not allowed (allowed: {allowed})"
        )
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise CalculatorError(f"{node.func.id}() takes plain positional arguments only")
    func, lo, hi = _FUNCTIONS[node.func.id]
    if not lo <= len(node.args) <= hi:
        raise CalculatorError(f"{node.func.id}() takes {lo}..{hi} arguments, got {len(node.args)}")
    args = [_eval(a, depth + 1) for a in node.args]
    if (
        node.func.id == "round"
        and len(args) == 2
        and (not isinstance(args[1], int) or abs(args[1]) > 100)
    ):
        raise CalculatorError(
            "round()'s second argument must be a whole number of digits up to 100"
        )
    try:
        return func(*args)
    except (ValueError, OverflowError, TypeError, ZeroDivisionError) as exc:  # log(x, 1)
        raise CalculatorError(f"{node.func.id}({', '.join(map(_short, args))}): {exc}") from None


def _checked(value: Any) -> Number:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CalculatorError(f"not a number: {value!r}")
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        raise CalculatorError(f"result too large (more than 1e{MAX_LOG10})")
    if isinstance(value, float) and (
        math.isnan(value) or math.isinf(value) or abs(value) > 10.0**MAX_LOG10
    ):
        raise CalculatorError(f"result too large or undefined ({value})")
    return value


def tidy(value: Number) -> Number:
    """Whole floats become ints (3500.0 -> 3500) so answers read naturally."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _short(value: Number) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def _shown(node: ast.AST) -> str:
    kind = type(node).__name__
    labels = {
        "Attribute": "attribute access",
        "Lambda": "a lambda",
        "Name": "the name " + getattr(node, "id", ""),
        "Subscript": "indexing",
        "Compare": "a comparison",
        "BoolOp": "a boolean operation",
        "JoinedStr": "an f-string",
        "ListComp": "a comprehension",
        "GeneratorExp": "a generator",
        "NamedExpr": "an assignment expression",
    }
    return labels.get(kind, kind)
