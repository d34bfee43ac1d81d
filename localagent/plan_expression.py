"""A tree plan written as one call expression, `P.Diff(a=P.Total(x="C"), b=2)`, and back.

The compact counterpart of the raw JSON tree form (`localagent/plan.py`): the same plan in
fewer tokens (`scripts/bench_plan_syntax.py` counts them on the suites' reference plans).
Arguments are keyword arguments; a nested call is an argument; a call's `"field"` is a
chain of subscripts, `P.GetCar(plate="K-77")["owner"]["name"]` for `owner.name` and
`[0]["price"]` for `[0].price`. Values are Python literals (`True`, `None`, lists, dicts).

Reading uses `ast` (no evaluation): anything but calls of dotted names, keyword arguments,
literals and subscripts is a `PlanValidationError`. JSON stays the saved plan format; this
module only converts.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from localagent.errors import PlanValidationError
from localagent.plan_nodes import parse_path, path_text

_LITERALS = {True: "True", False: "False", None: "None"}


def to_expression(plan: dict[str, Any]) -> str:
    """The raw tree plan `plan` (`{"function": "P.F", "args": {...}, "field": ...}`) as a
    call expression."""
    args = ", ".join(f"{name}={_arg(value)}" for name, value in plan.get("args", {}).items())
    field = plan.get("field")
    path = parse_path(field) if isinstance(field, str) else tuple(field or ())
    if path is None:
        raise PlanValidationError(f"bad field path {field!r}")
    return f"{plan['function']}({args})" + "".join(f"[{json.dumps(p)}]" for p in path)


def _arg(value: Any) -> str:
    if isinstance(value, dict) and "function" in value:
        return to_expression(value)
    if isinstance(value, dict) and value.get("kind") == "value":
        return _literal(value["value"])
    if isinstance(value, list):
        return "[" + ", ".join(_arg(v) for v in value) + "]"
    return _literal(value)


def _literal(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return _LITERALS[value]
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_literal(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def parse_expression(text: str) -> dict[str, Any]:
    """The raw tree plan a call expression spells; PlanValidationError when it is none."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise PlanValidationError(f"not a call expression: {e.msg}") from None
    return _call(tree.body)


def _call(node: ast.expr) -> dict[str, Any]:
    path: list[str | int] = []
    while isinstance(node, ast.Subscript):
        key = node.slice
        if not isinstance(key, ast.Constant) or isinstance(key.value, bool) or \
                not isinstance(key.value, (str, int)):
            raise PlanValidationError("a field is a string key or an integer index")
        path.insert(0, key.value)
        node = node.value
    if not isinstance(node, ast.Call) or node.args:
        raise PlanValidationError("expected a call with keyword arguments only")
    plan: dict[str, Any] = {"function": _dotted(node.func), "args": {}}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise PlanValidationError("** arguments are not allowed")
        plan["args"][keyword.arg] = _value(keyword.value)
    if path:
        plan["field"] = path_text(tuple(path), lead=False)
    return plan


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise PlanValidationError("a function is a dotted name such as Plugin.Function")


def _value(node: ast.expr) -> Any:
    if isinstance(node, (ast.Call, ast.Subscript)):
        return _call(node)
    if isinstance(node, ast.List):
        return [_value(item) for item in node.elts]
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError):
        raise PlanValidationError("an argument is a call or a literal") from None
    if isinstance(value, dict):  # a literal object, as the raw form writes one
        return {"kind": "value", "value": value}
    if isinstance(value, (set, tuple, complex, bytes)):
        raise PlanValidationError(f"{type(value).__name__} is not a JSON value")
    return value
