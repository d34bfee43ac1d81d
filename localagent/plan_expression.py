"""A tree plan written as one call expression, `P.Diff(a=P.Total(x="C"), b=2)`, and back.

The compact counterpart of the raw JSON tree form (`localagent/plan.py`): the same plan in
fewer tokens (`scripts/bench_plan_syntax.py` counts them on the suites' reference plans).
Arguments are keyword arguments; a nested call is an argument; a call's `"field"` is a
chain of subscripts, `P.GetCar(plate="K-77")["owner"]["name"]` for `owner.name` and
`[0]["price"]` for `[0].price`. Values are JSON (`true`, `null`, `[1, 2]`, `{"a": 1}`), so
the grammar writes them with the same bounded JSON rules as the tree plan's; Python's
`True`, `False` and `None` are read too.

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

_JSON_NAMES = {"true": True, "false": False, "null": None}


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
        return json.dumps(value["value"], ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_arg(v) for v in value) + "]"
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
    value = _json(node)
    if isinstance(value, dict):  # a literal object, as the raw form writes one
        return {"kind": "value", "value": value}
    return value


def _json(node: ast.expr) -> Any:
    """A JSON value written as an expression (no calls inside a literal object)."""
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(
            node.value, (bool, int, float, str))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(
            node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        return -node.operand.value
    if isinstance(node, ast.List):
        return [_json(item) for item in node.elts]
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(
            k.value, str) for k in node.keys):
        return {k.value: _json(v) for k, v in zip(node.keys, node.values)}  # type: ignore[union-attr]
    raise PlanValidationError("an argument is a call or a JSON value")
