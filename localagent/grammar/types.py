"""Which return types may feed which parameters in a tree plan.

A nested call may stand where a parameter's type accepts the callee's return type:
a number into a number, an integer into a number or an integer, anything into a string
(the executor renders it as text), anything into an untyped (`{}`) parameter. A callee
whose return schema is unknown (`{}`) fits only strings and untyped parameters: we cannot
promise it yields a number. Enum and const parameters accept no calls (a call cannot
promise one of the listed values).
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
ANY = "any"


def json_types(schema: Any, root: Schema | None = None, _depth: int = 0) -> set[str]:
    """The JSON types a schema admits; {"any"} for an unconstrained schema."""
    if not isinstance(schema, dict) or _depth > 8:
        return {ANY} if schema is not False else set()
    if "$ref" in schema and root is not None:
        return json_types(_resolve(schema["$ref"], root), root, _depth + 1)
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        return {"enum"} if values else set()
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            out: set[str] = set()
            for sub in schema[combo]:
                out |= json_types(sub, root, _depth + 1)
            return out
    if schema.get("allOf"):
        return json_types(schema["allOf"][0], root, _depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        return set(t)
    if isinstance(t, str):
        return {t}
    if "properties" in schema:
        return {"object"}
    if "items" in schema:
        return {"array"}
    return {ANY}


def fits(param: Schema, returns: Schema, root: Schema | None = None) -> bool:
    """Whether a call returning `returns` may stand where `param` is expected."""
    p = json_types(param, root)
    if "enum" in p:
        return False
    r = json_types(returns)
    if ANY in p or "string" in p:
        return True
    if not r or ANY in r or "enum" in r:
        return False
    widened = set(p) | ({"integer"} if "number" in p else set())
    return r <= widened


def _resolve(ref: str, root: Schema) -> Any:
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return {}
        node = node[part]
    return node
