"""Tools described by a JSON schema rather than a Python function.

`schema_tool` turns an OpenAI-style function schema into a `Tool`: the schema is what
models, grammars and prompts see, `jsonschema` checks (and lightly coerces) what the model
sends back, and `call` is whatever should run. Without a callable the tool is a
`RecordingStub`: it records each call and returns a placeholder, which is all a benchmark
that judges the calls (BFCL compares the function names and arguments a model chose, not
what the functions returned) needs.

    tool = schema_tool({"name": "math.factorial", "description": "n!",
                        "parameters": {"type": "object",
                                       "properties": {"n": {"type": "integer"}},
                                       "required": ["n"]}}, lambda n: math.factorial(n))
    registry.add_tool(tool)   # math.factorial, validated like a Python tool

(The module is not called `schema_tool`: importing it would then replace the lazily
exported function `localagent.tools.schema_tool` with the module.)
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from localagent.errors import InvalidArgumentsError, PluginLoadError
from localagent.tools.decorator import NAME_RE
from localagent.tools.function import Tool, check_name, make_caller
from localagent.tools.recording_stub import RecordingStub
from localagent.tools.schema import inline_refs
from localagent.tools.spec import ToolSpec

__all__ = ["RecordingStub", "schema_tool", "schema_tools"]

DEFAULT_PLUGIN = "functions"
_MAX_DIGITS = 4000  # below sys.get_int_max_str_digits() (default 4300)
_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$")
_NUMBER_RE = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$")


def schema_tool(
    function: Mapping[str, Any],
    call: Callable[..., Any] | None = None,
    *,
    plugin: str | None = None,
    side_effects: bool = False,
) -> Tool:
    """A `Tool` from an OpenAI-style function schema.

    `function` is `{"type": "function", "function": {"name", "description",
    "parameters"}}` or the inner mapping alone; an optional `"returns"` (or
    `"output_schema"`) JSON schema becomes `ToolSpec.returns`. `parameters` must be an
    object schema; it is kept as given (copied), with `"additionalProperties": false`
    added when absent, as for Python tools.

    Names: `math.factorial` gives plugin `math` and function `factorial`; a name without
    a dot goes to `plugin`, default `"functions"`; an explicit `plugin` replaces the
    dotted prefix. Characters not allowed in a name become `_` (`get-weather` ->
    `get_weather`); map back from `tool.qualified_name` to the schema's name yourself
    when a judge needs the original.

    `call` (sync or async) receives the validated arguments as keywords; None means a
    fresh `RecordingStub`, and a `RecordingStub` is asked for this function's callable.
    The validator coerces what a model commonly sends (`"3"` for an integer or a number,
    `3` for a number gives `3.0`, `"true"` for a boolean, `7` for a string), fills in
    declared defaults, and raises one InvalidArgumentsError listing every problem.

    `side_effects=True`: calls change the world (need approval, run at most once per
    distinct call in a run), as `@tool(side_effects=True)`.

    Raises PluginLoadError (one line) for a malformed schema or an unusable name.
    """
    inner = _inner(function)
    plugin_name, name = _names(inner, plugin)
    qualified = f"{plugin_name}.{name}"
    description = inner.get("description") or ""
    if not isinstance(description, str):
        raise PluginLoadError(f'{qualified}: "description" must be a string')
    parameters = _parameters(inner.get("parameters"), qualified)
    returns = inner.get("returns", inner.get("output_schema")) or {}
    if not isinstance(returns, Mapping):
        raise PluginLoadError(f"{qualified}: the return schema must be an object")
    returns = copy.deepcopy(dict(returns))
    validator_cls = _validator_class(parameters, qualified, "parameters")
    if returns:
        _validator_class(returns, qualified, "return schema")
        returns = _standalone(returns, qualified)
    spec = ToolSpec(
        plugin=plugin_name,
        name=name,
        description=description.strip(),
        parameters=parameters,
        returns=returns,
        kind="native",
        side_effects=bool(side_effects),
    )
    if call is None:
        call = RecordingStub()
    if isinstance(call, RecordingStub):
        call = call.for_function(qualified, returns)
    if not callable(call):
        raise PluginLoadError(f"{qualified}: call must be callable, got {type(call).__name__}")
    checker = _ArgsValidator(qualified, parameters, validator_cls(parameters))
    return Tool(spec=spec, validator=checker, call=make_caller(call))


def schema_tools(
    functions: Iterable[Mapping[str, Any]],
    call: Callable[..., Any] | Mapping[str, Callable[..., Any]] | None = None,
    *,
    plugin: str | None = None,
    side_effects: bool = False,
) -> list[Tool]:
    """`schema_tool` for each schema, in order. `call` is one callable for all, a
    RecordingStub (None: one fresh stub shared by all), or a mapping from the schema's
    name (or the qualified name) to each function's callable; `side_effects` holds for all."""
    stub = RecordingStub() if call is None else None
    tools = []
    for function in functions:
        target = stub if call is None else call
        if isinstance(call, Mapping):
            inner = _inner(function)
            qualified = ".".join(_names(inner, plugin))
            target = call.get(inner["name"], call.get(qualified))
            if target is None:
                raise PluginLoadError(f"no callable given for {inner['name']!r}")
        tools.append(schema_tool(function, target, plugin=plugin, side_effects=side_effects))
    return tools


# --- building -----------------------------------------------------------------------------


def _inner(function: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(function, Mapping):
        raise PluginLoadError(f"a function schema must be a mapping, got {type(function).__name__}")
    wrapped = function.get("function")
    if isinstance(wrapped, Mapping):
        kind = function.get("type", "function")
        if kind != "function":
            raise PluginLoadError(f'unsupported tool type {kind!r}: expected "function"')
        return wrapped
    return function


def _standalone(returns: dict[str, Any], qualified: str) -> dict[str, Any]:
    """`returns` with its `$ref`s to `$defs` inlined, so the grammar and the plan check see
    the fields of every object in it (structured results); a recursive schema stays as
    it is (its fields are then checked only when a plan runs)."""
    if "$defs" not in returns:
        return returns
    try:
        return inline_refs(returns, qualified)
    except PluginLoadError:
        return returns


def _names(inner: Mapping[str, Any], plugin: str | None) -> tuple[str, str]:
    """(plugin, function) from the schema's name and the explicit `plugin`."""
    raw_name = inner.get("name")
    if not isinstance(raw_name, str) or not raw_name.strip():
        raise PluginLoadError(f'a function schema needs a "name" string, got {raw_name!r}')
    prefix, _, base = raw_name.strip().rpartition(".")
    if plugin is not None:
        check_name(plugin, "plugin")
    elif prefix:
        plugin = _identifier(prefix, raw_name, "plugin")
    return plugin or DEFAULT_PLUGIN, _identifier(base, raw_name, "function")


def _identifier(part: str, raw_name: str, what: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", part)
    if not NAME_RE.match(name):
        raise PluginLoadError(
            f"cannot name a tool after {raw_name!r}: the {what} name {name!r} must start "
            "with a letter or _"
        )
    return name


def _parameters(raw: Any, qualified: str) -> dict[str, Any]:
    if raw is None:
        raw = {"type": "object", "properties": {}}
    if not isinstance(raw, Mapping) or raw.get("type", "object") != "object":
        shown = raw.get("type") if isinstance(raw, Mapping) else type(raw).__name__
        raise PluginLoadError(
            f'{qualified}: parameters must be a JSON schema with type "object", got {shown!r}'
        )
    raw = copy.deepcopy(dict(raw))
    properties = raw.pop("properties", {})
    required = raw.pop("required", [])
    if not isinstance(properties, Mapping) or not all(
        isinstance(s, Mapping) for s in properties.values()
    ):
        raise PluginLoadError(f'{qualified}: "properties" must map names to schemas')
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise PluginLoadError(f'{qualified}: "required" must be a list of names')
    undeclared = [r for r in required if r not in properties]
    if undeclared and raw.get("additionalProperties", False) is False:
        raise PluginLoadError(
            f"{qualified}: required argument(s) {', '.join(undeclared)} not in properties"
        )
    raw.pop("type", None)
    additional = raw.pop("additionalProperties", False)
    return {
        "type": "object",
        "properties": dict(properties),
        "required": required,
        **raw,
        "additionalProperties": additional,
    }


def _validator_class(schema: dict[str, Any], qualified: str, what: str) -> Any:
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise PluginLoadError(
            f"{qualified}: invalid {what} at {where}: {_short(exc.message)}"
        ) from None
    _check_refs(schema, qualified, what)
    return cls


def _check_refs(schema: dict[str, Any], qualified: str, what: str) -> None:
    """Every `$ref` must resolve within the schema: the metaschema does not check it, and
    jsonschema would only fail (with its own error) when a call is validated."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    uri = "urn:localagent:schema"
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = Registry().with_resource(uri, resource).resolver(uri)
    for ref in _refs(schema):
        try:
            resolver.lookup(ref)
        except Unresolvable:
            raise PluginLoadError(
                f"{qualified}: unresolvable $ref {_short(ref)} in the {what}"
            ) from None


def _refs(node: Any) -> list[str]:
    """The `$ref` strings of a schema (not those inside enum, const, default or examples)."""
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    if not isinstance(node, Mapping):
        return []
    found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    return found + [ref for key, value in node.items()
                    if key not in ("enum", "const", "default", "examples") for ref in _refs(value)]


# --- validating ---------------------------------------------------------------------------


class _ArgsValidator:
    """Coerce, check with jsonschema, fill defaults; one error listing every problem."""

    def __init__(self, qualified: str, parameters: dict[str, Any], validator: Any) -> None:
        self.qualified = qualified
        self.parameters = parameters
        self.validator = validator
        self.expected = ", ".join(parameters["properties"]) or "none"

    def __call__(self, args: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(args, Mapping):
            raise InvalidArgumentsError(
                f"arguments for {self.qualified} must be an object, got {type(args).__name__}"
            )
        values = _coerce(self.parameters, dict(args), type(self.validator))
        problems: list[str] = []
        for error in self.validator.iter_errors(values):
            for problem in _problems(error):
                if problem not in problems:
                    problems.append(problem)
        if problems:
            raise InvalidArgumentsError(
                f"invalid arguments for {self.qualified}: " + "; ".join(problems),
                hint=f"arguments: {self.expected}",
            )
        for prop, sub in self.parameters["properties"].items():
            if prop not in values and isinstance(sub, Mapping) and "default" in sub:
                values[prop] = copy.deepcopy(sub["default"])
        return values


def _coerce(schema: Any, value: Any, cls: Any) -> Any:
    """`value` with the obvious model mistakes fixed where `schema` says what it must be;
    anything else is left for the validator to report."""
    if not isinstance(schema, Mapping):
        return value
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if any(_is_valid(cls, o, value) for o in options):
                return value
            for option in options:
                fixed = _coerce(option, value, cls)
                if fixed is not value and _is_valid(cls, option, fixed):
                    return fixed
            return value
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    if kinds:
        value = _coerce_scalar(kinds, value, cls)
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        properties = schema["properties"]
        value = {k: _coerce(properties.get(k), v, cls) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        value = [_coerce(schema["items"], v, cls) for v in value]
    return value


def _coerce_scalar(kinds: list[str], value: Any, cls: Any) -> Any:
    checker = cls.TYPE_CHECKER
    matched = [k for k in kinds if _is_type(checker, value, k)]
    if matched:
        if "integer" in matched and isinstance(value, float):
            return int(value)  # 3.0 for an integer
        if "number" in matched and "integer" not in kinds and type(value) is int:
            # 3 for a number, as pydantic's float; an integer past a float's range stays
            return float(value) if abs(value) < 2**1023 else value
        return value
    for kind in kinds:
        if isinstance(value, str):
            # int() refuses thousands of digits: such a text is left for the validator
            if kind == "integer" and _INT_RE.match(value) and len(value) <= _MAX_DIGITS:
                return int(value)
            if kind == "number" and _NUMBER_RE.match(value):
                number = float(value)
                if math.isfinite(number):
                    return number
            if kind == "boolean" and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
        elif kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    return value


def _is_type(checker: Any, value: Any, kind: str) -> bool:
    try:
        return bool(checker.is_type(value, kind))
    except Exception:  # noqa: BLE001 - an unknown type name: nothing to coerce to
        return False


def _is_valid(cls: Any, schema: Any, value: Any) -> bool:
    try:
        return bool(cls(schema).is_valid(value))
    except Exception:  # noqa: BLE001 - e.g. a $ref that only resolves from the root
        return False


def _problems(error: Any) -> list[str]:
    path = [str(p) for p in error.absolute_path]
    loc = ".".join(path)
    kind = error.validator
    instance = error.instance
    if kind == "required" and isinstance(instance, Mapping):
        return [
            f"missing argument '{'.'.join([*path, r])}'"
            for r in error.validator_value
            if r not in instance
        ]
    if kind == "additionalProperties" and isinstance(instance, Mapping):
        declared = error.schema.get("properties", {})
        patterns = error.schema.get("patternProperties", {})
        extra = [
            k for k in instance if k not in declared and not any(re.search(p, k) for p in patterns)
        ]
        if extra:
            return [f"unknown argument '{'.'.join([*path, k])}'" for k in extra]
    where = f"argument '{loc}'" if loc else "(arguments)"
    shown = _short(repr(instance), 60)
    if kind == "type":
        kinds = error.validator_value
        label = " or ".join(kinds) if isinstance(kinds, list) else str(kinds)
        return [f"{where}: expected {label} (got {shown})"]
    if kind == "enum":
        options = ", ".join(json.dumps(v, default=str) for v in error.validator_value)
        return [f"{where}: must be one of {_short(options)} (got {shown})"]
    return [f"{where}: {_short(error.message)}"]


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
