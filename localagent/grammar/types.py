"""Which return types may feed which parameters in a tree plan.

A nested call may stand where a parameter's type accepts the callee's return type:
a number into a number, an integer into a number or an integer, anything into a string
(the executor renders it as text), anything into an untyped (`{}`) parameter. A callee
whose return schema is unknown (`{}`) fits only strings and untyped parameters: we cannot
promise it yields a number. An enum parameter accepts a call that returns the type of its
values (a string-returning lookup into a `Literal` of names): no grammar can promise the
value is one of the listed ones, but without this a chain such as
`GetSalary(name=GetDriver(vehicle="Ember"))` could never be planned; the executor checks
the value when the call runs. A const parameter accepts no call.

A callee that declares its values (`-> Literal["Priya", "Hugo"]`) fits only where every one
of them is admitted: into an enum parameter that declares them all, or into a parameter of
their type. So `GetMileage(vehicle=GetDriver(...))` is not a plan when GetDriver returns
people and `vehicle` takes vehicles: a small model's commonest runaway nesting, measured on
the generalisation suite. The parameter's declared values count, not the ones a planner
narrowed it to for literals (`mentions` keeps them under `DECLARED`).
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
ANY = "any"
# An enum's values before a planner narrowed them; None: the parameter was an open type
# (a number narrowed to the goal's numbers), judged by its "type".
DECLARED = "x-declared-enum"


_JSON_TYPE = {bool: "boolean", int: "integer", float: "number", str: "string"}


def value_type(value: Any) -> str:
    """The JSON type of a Python value ("enum" for anything else, e.g. None)."""
    return _JSON_TYPE.get(type(value), "enum")


def string_enum(schema: Any) -> list[str]:
    """The values of a closed set of strings (a `Literal` key), else []."""
    enum = schema.get("enum") if isinstance(schema, dict) else None
    return list(enum) if enum and all(isinstance(v, str) for v in enum) else []


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
    enum = "enum" in p or (not p and _enum_schema(param, root) is not None)
    if enum:  # the call must return the very type of the values
        p = _enum_value_types(param, root)
    r = json_types(returns)
    if "enum" in r:
        return _values_fit(param, returns, root, p if not enum else set())
    if not enum and (ANY in p or "string" in p):
        return True
    if not r or ANY in r or "enum" in r:
        return False
    widened = set(p) | ({"integer"} if "number" in p else set())
    return r <= widened


def _values_fit(param: Schema, returns: Schema, root: Schema | None, types: set[str]) -> bool:
    """Whether every value a callee declares (`enum`/`const` return) is admitted by `param`:
    one of its declared values, or else a value of one of its JSON types."""
    values = [returns["const"]] if "const" in returns else list(returns.get("enum", []))
    enum = _enum_schema(param, root)
    if enum is not None:
        declared = enum.get(DECLARED, enum["enum"])
        if declared is not None:
            return bool(values) and all(v in declared for v in values)
        types = {enum["type"]} if isinstance(enum.get("type"), str) else {ANY}
    widened = set(types) | ({"integer"} if "number" in types else set())
    return bool(values) and (ANY in types or all(value_type(v) in widened for v in values))


def _enum_schema(param: Any, root: Schema | None) -> Schema | None:
    if isinstance(param, dict) and "$ref" in param and root is not None:
        param = _resolve(param["$ref"], root)
    return param if isinstance(param, dict) and "enum" in param else None


def _enum_value_types(param: Schema, root: Schema | None) -> set[str]:
    """The JSON types of an enum's values (and its declared type, for an empty enum)."""
    schema = _enum_schema(param, root)
    if schema is None:
        return set()
    types = {value_type(v) for v in schema["enum"]}
    if isinstance(schema.get("type"), str):
        types.add(schema["type"])
    return types - {"enum"} if "enum" not in types else set()


def _resolve(ref: str, root: Schema) -> Any:
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return {}
        node = node[part]
    return node
