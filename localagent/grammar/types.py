"""Whether a call's result may stand where a parameter is expected: the one rule.

Three questions about a *result* (a nested call's, or a step's that a reference names),
answered here and nowhere else:

- `fits(param, returns)`: do the types promise that the result is a value of the
  parameter? The grammar's question (a nested call in a tree plan, a typed `$k`
  reference) and the parsers' (`parse_tree`), so constrained and unconstrained outputs
  are judged alike.
- `may_fit(param, returns)`: can the result be a value of the parameter at all? The plan
  checker's question before a plan runs: it rejects only what no value could pass. Every
  pairing `fits` admits passes it.
- `passed_as_text(param, value)`: does the executor pass a computed value as its text?
  Where the parameter takes strings and not the value's own type: what makes "anything
  fits a string parameter" true when the plan runs.

Whether a *literal* value fits a parameter is a different question (a value, not a type),
answered by JSON Schema validation in the parsers (`parse.args_errors`) and by the
registry's lax coercion in the plan checker (`plan_check.literal_problem`).

The rules of `fits`: a number fits a number, an integer a number or an integer, anything
a string (the executor renders it as text, `passed_as_text`), anything an untyped (`{}`)
parameter. A callee whose return schema is unknown (`{}`) fits only strings and untyped
parameters: nothing promises it yields a number. An enum parameter accepts a call that
returns the type of its values (a string-returning lookup into a `Literal` of names): no
grammar can promise the value is one of the listed ones, but without this no chain of
lookups by name could be planned; the registry checks the value when the call runs. A
const parameter accepts no call.

A callee that declares its values (`-> Literal["x", "y"]`) fits only where every one of
them is admitted: into an enum parameter that declares them all, or into a parameter of
their type. So a lookup that returns people does not fit a parameter that takes vehicles,
a small model's commonest runaway nesting. The parameter's declared values count, not the
ones a planner narrowed it to for literals (`mentions` keeps them under `DECLARED`).
"""

from __future__ import annotations

import json
from typing import Any

Schema = dict[str, Any]
ANY = "any"
# An enum's values before a planner narrowed them; None: the parameter was an open type
# (a number narrowed to the goal's numbers), judged by its "type".
DECLARED = "x-declared-enum"


_JSON_TYPE = {bool: "boolean", int: "integer", float: "number", str: "string"}
_SCALARS = frozenset({"string", "number", "integer", "boolean"})


def value_type(value: Any) -> str:
    """The JSON type of a Python value ("enum" for anything else, e.g. None)."""
    return _JSON_TYPE.get(type(value), "enum")


def json_type(value: Any) -> str:
    """The JSON type of a Python value, any value ("null", "array", "object" included)."""
    if value is None:
        return "null"
    for kind, name in _JSON_TYPE.items():  # bool before int: a bool is an int in Python
        if isinstance(value, kind):
            return name
    return "array" if isinstance(value, (list, tuple)) else "object"


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


def value_types(schema: Schema, root: Schema | None = None) -> set[str] | None:
    """The JSON types of the values `schema` admits, an enum's or const's being its values'
    types; None where it does not say (no type, or a branch without one). A `$ref`
    resolves against `root` (without one it is taken for an object). The value-level view
    `may_fit`, `passed_as_text` and the plan check's literal check share; `json_types` is
    the grammar's, where an enum is a kind of its own."""
    if "anyOf" in schema or "oneOf" in schema:
        types: set[str] = set()
        for branch in schema.get("anyOf", schema.get("oneOf", [])):
            sub = value_types(branch, root) if isinstance(branch, dict) else None
            if sub is None:
                return None
            types |= sub
        return types
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    if "$ref" in schema and root is not None:
        target = _resolve(schema["$ref"], root)
        return value_types(target, None) if isinstance(target, dict) and target else None
    if "$ref" in schema or "properties" in schema:
        return {"object"}
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return {json_type(v) for v in values}
    return None


def fits(param: Schema, returns: Schema, root: Schema | None = None) -> bool:
    """Whether a call returning `returns` may stand where `param` is expected: whether the
    types promise it (the rules in the module docstring). `$ref`s in `param` resolve
    against `root`."""
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


def may_fit(param: Schema, returns: Schema, root: Schema | None = None) -> bool:
    """Whether a call returning `returns` can stand where `param` is expected, for some
    value it returns: whatever `fits`; else wherever either schema does not say its types,
    or both admit a value of one kind (scalars: strings, numbers, integers and booleans,
    which the registry's lax coercion turns into one another; arrays; objects; null),
    unless both declare their values (enums, consts) and share none."""
    if fits(param, returns, root):
        return True
    have, want = value_types(returns), value_types(param, root)
    if have is None or want is None:
        return True
    if not _kinds(have) & _kinds(want):
        return False
    offered, taken = _declared_values(returns, None), _declared_values(param, root)
    if offered is None or taken is None:
        return True
    return any(v in taken or (passed_as_text(param, v, root) and as_text(v) in taken)
               for v in offered)


def passed_as_text(param: Schema, value: Any, root: Schema | None = None) -> bool:
    """Whether a computed `value` (a call's result, or a step's) is passed as its text
    where `param` is expected: `param` admits strings and not the value's own type (an
    integer counts as a number)."""
    if isinstance(value, str):
        return False
    types = value_types(param, root)
    if types is None or "string" not in types:
        return False
    own = json_type(value)
    return own not in types and not (own == "integer" and "number" in types)


def as_text(value: Any) -> str:
    """The text a computed value is passed as (`passed_as_text`): a string as it is, a
    number as Python writes it, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _kinds(types: set[str]) -> set[str]:
    return {"scalar" if t in _SCALARS else t for t in types}


def _declared_values(schema: Schema, root: Schema | None) -> list[Any] | None:
    """The values an enum or const declares (before any narrowing), or None."""
    if "const" in schema:
        return [schema["const"]]
    enum = _enum_schema(schema, root)
    if enum is None:
        return None
    declared = enum.get(DECLARED, enum["enum"])
    return None if declared is None else list(declared)


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
