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
import re
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


# --- fields of structured results ----------------------------------------------------------
#
# A result that is an object or a list has parts a later call may take (`$1.total`,
# `Get(...).items[0].price`). `field_schema` is the schema of one part, the plan checker's
# and the parser's question; `field_paths` lists the parts a grammar offers: bounded, so the
# grammar stays finite (at most FIELD_KEYS keys and FIELD_INDEXES one list index per path,
# indexes 0..MAX_INDEX, at most MAX_FIELD_PATHS paths per result).

FIELD_KEYS = 2
FIELD_INDEXES = 1
MAX_INDEX = 3
MAX_FIELD_PATHS = 32
ANY_KEY = "*"
"""A path segment of the grammar's paths: any key of an object that declares none."""
ANY_INDEX = -1
"""A path segment of the grammar's paths: any list index 0..MAX_INDEX."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
GrammarPath = tuple[str | int, ...]


def field_schema(returns: Schema, path: tuple[str | int, ...]) -> tuple[Schema, str | None]:
    """The schema of the part of a result (declared by `returns`) at `path`, and None; or
    `({}, why)` when the schema says there is no such part (an undeclared key of an object
    that declares its keys, an index into an object, a key into a list). Where the schema
    does not say (`{}`, an object without declared keys), the part is `{}`: the executor
    checks it when the plan runs."""
    schema: Schema = returns
    for n, part in enumerate(path):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[:n])
        found = _part_schema(schema, part)
        if isinstance(found, str):
            return {}, f"{where or 'the result'} {found}"
        schema = found
    return schema, None


def _part_schema(schema: Schema, part: str | int) -> Schema | str:
    """The schema of one key or index of `schema`, or why there is none."""
    if not isinstance(schema, dict) or not schema:
        return {}
    for combo in ("anyOf", "oneOf"):
        if combo in schema:  # `Model | None`: the branches that have the part
            found = [b for b in (_part_schema(s, part) for s in schema[combo]
                                 if isinstance(s, dict) and s.get("type") != "null")]
            usable = [b for b in found if not isinstance(b, str)]
            if usable:
                return usable[0] if len(usable) == 1 else {"anyOf": usable}
            return found[0] if found else {}
    if schema.get("allOf"):
        return _part_schema(schema["allOf"][0], part)
    types = json_types(schema)
    if isinstance(part, int):
        if "array" not in types and ANY not in types:
            return f"is {_article(types)}, not a list: no [{part}]"
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and part < len(prefix):
            return prefix[part]
        if isinstance(prefix, list) and schema.get("items") is False:
            return f"has {len(prefix)} items: no [{part}]"
        items = schema.get("items", {})
        return items if isinstance(items, dict) else {}
    if "object" not in types and ANY not in types:
        return f"is {_article(types)}, not an object: no field {part!r}"
    props = schema.get("properties") or {}
    if part in props:
        return props[part] if isinstance(props[part], dict) else {}
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    if props and extra is not True:
        return f"has no field {part!r} (fields: {', '.join(props)})"
    return {}


def _article(types: set[str]) -> str:
    names = {"array": "a list", "object": "an object", "integer": "an integer",
             "enum": "one of fixed values", "null": "null"}
    return " or ".join(sorted(names.get(t, f"a {t}") for t in types)) or "nothing"


def field_paths(returns: Schema) -> list[tuple[GrammarPath, Schema]]:
    """The parts of a result a grammar offers, with their schemas, outermost first: each
    declared key (names that are identifiers; `ANY_KEY` for an object that declares none
    but is an object), each list's items (`ANY_INDEX`), to FIELD_KEYS keys and
    FIELD_INDEXES indexes deep, at most MAX_FIELD_PATHS. A result of unknown type (`{}`)
    has none: a plan takes it whole."""
    out: list[tuple[GrammarPath, Schema]] = []

    def walk(schema: Schema, path: GrammarPath, keys: int, indexes: int) -> None:
        for part in _parts(schema, keys < FIELD_KEYS, indexes < FIELD_INDEXES):
            if len(out) >= MAX_FIELD_PATHS:
                return
            sub = _part_schema(schema, 0 if part == ANY_INDEX else part)
            if isinstance(sub, str):
                continue
            out.append((path + (part,), sub))
            walk(sub, path + (part,), keys + (part != ANY_INDEX), indexes + (part == ANY_INDEX))

    walk(returns, (), 0, 0)
    return out


def _parts(schema: Schema, key: bool, index: bool) -> list[str | int]:
    """The segments a grammar path may take next into `schema`."""
    if not isinstance(schema, dict) or not schema:
        return []
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            branches = [s for s in schema[combo] if isinstance(s, dict)
                        and s.get("type") != "null"]
            return _parts(branches[0], key, index) if len(branches) == 1 else []
    types = json_types(schema)
    if "array" in types and index and types <= {"array", "null"}:
        return [ANY_INDEX]
    if "object" in types and key and types <= {"object", "null"}:
        props = schema.get("properties") or {}
        names = [k for k in props if _NAME.match(k)]
        if names:
            return list(names)
        return [ANY_KEY] if not props else []
    return []


def grammar_path_text(path: GrammarPath, lead: bool = True) -> str:
    """A grammar path as text with its wildcards shown (`.items[*].price`), for messages."""
    text = "".join("[*]" if p == ANY_INDEX else f".{p}" for p in path)
    return text if lead else text.removeprefix(".")
