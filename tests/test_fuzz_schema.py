"""Property tests of argument coercion and validation: tools from Python signatures
(`localagent.tools.schema`, pydantic) and tools from JSON schemas
(`localagent.tools.from_schema`, jsonschema), with random and hostile arguments.

The properties:
- a validator returns the coerced arguments or raises `InvalidArgumentsError` (one error
  listing every problem), for any value: wrong types, numbers as text of thousands of
  digits, NaN, infinity, unicode digits, whitespace, nested junk;
- what a JSON-schema tool's validator returns passes that schema (coercion never makes
  an invalid value look valid), and a Python tool's validated arguments can be called;
- `schema_tool` with a random (often malformed) schema gives a `Tool` or `PluginLoadError`.
Examples per test: the hypothesis profile (tests/conftest.py, "ci").
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from hypothesis import example, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import Field

from localagent.errors import InvalidArgumentsError, PluginLoadError
from localagent.tools.from_schema import schema_tool
from localagent.tools.registry import ToolRegistry


class Color(Enum):
    RED = "red"
    BLUE = "blue"


def typed(count: int, ratio: float, flag: bool, name: str,
          ids: list[int], weights: dict[str, float], mode: Literal["a", "b"] = "a",
          color: Color = Color.RED, limit: Annotated[int, Field(ge=0, le=100)] = 10,
          note: str | None = None) -> str:
    """A function with one parameter of each common kind."""
    return f"{count}{ratio}{flag}{name}{ids}{weights}{mode}{color}{limit}{note}"


REGISTRY = ToolRegistry()
REGISTRY.add_function(typed, "Py")

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": -5, "maximum": 10**6},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "name": {"type": "string", "maxLength": 20},
        "ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 5},
        "choice": {"enum": ["x", "y", 3]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-z]+$"}]},
        "nested": {"type": "object", "properties": {"depth": {"type": "integer"},
                                                    "tags": {"type": "array",
                                                             "items": {"type": "string"}}},
                   "required": ["depth"], "additionalProperties": False},
        "maybe": {"type": ["number", "null"], "default": None},
    },
    "required": ["count", "name"],
}
JSON_TOOL = schema_tool({"name": "js.fn", "description": "A JSON-schema tool.",
                         "parameters": SCHEMA}, lambda **kw: kw)
JSON_VALIDATOR = Draft202012Validator(JSON_TOOL.spec.parameters)

_HOSTILE_TEXT = st.sampled_from([
    "1" * 5000, "-" + "9" * 4301, " 42 ", "4_2", "٤٢", "４２", "1e999", "-1e999", "nan", "NaN",
    "inf", "Infinity", "0x10", "1e5", ".5", "5.", "true", "True", " false ", "yes", "",
    "\x00", "\u202e1", "1\n", "1" * 300 + ".5", "1e" + "9" * 5000,
])
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True,
                                                                 allow_infinity=True),
              st.text(max_size=10), _HOSTILE_TEXT, st.integers(10**300, 10**4000)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)


def _args(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.one_of(st.sampled_from(names), st.text(max_size=5))
    return st.dictionaries(keys, _VALUES, max_size=len(names) + 1)


_PY_NAMES = list(REGISTRY.spec("Py.typed").parameters["properties"])


@example({"count": "1" * 5000, "ratio": 1, "flag": True, "name": "n", "ids": [], "weights": {}})
@example({"count": 1, "ratio": "1e999", "flag": "yes", "name": 10**4000, "ids": ["٣"],
          "weights": {"a": "nan"}})
@given(st.one_of(_args(_PY_NAMES), _VALUES))
def test_python_tool_arguments_are_coerced_or_refused(args: Any) -> None:
    try:
        kwargs = REGISTRY.validate_args("Py.typed", args)
    except InvalidArgumentsError as exc:
        assert exc.one_line()
        return
    assert set(kwargs) == set(_PY_NAMES)
    assert isinstance(typed(**kwargs), str)


_JSON_NAMES = list(SCHEMA["properties"])


@example({"count": "1" * 5000, "name": "n"})  # found: int() refused > 4300 digits (ValueError)
@example({"count": " -" + "9" * 4400 + " ", "name": 7})
@example({"count": 3.0, "name": 10**4000})  # a number of 4001 digits passed as a string
@example({"count": 1, "name": "n", "either": "1" * 5000})
@given(st.one_of(_args(_JSON_NAMES), _VALUES))
def test_json_schema_tool_arguments_are_coerced_or_refused(args: Any) -> None:
    try:
        values = JSON_TOOL.validator(args)
    except InvalidArgumentsError as exc:
        assert exc.one_line()
        return
    assert JSON_VALIDATOR.is_valid(values), values


_SCHEMA_PARTS = st.recursive(
    st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["integer", "number", "string", "boolean",
                                                        "null", "array", "object", "nope"])}),
        st.fixed_dictionaries({"enum": st.lists(st.one_of(st.integers(), st.text(max_size=3)),
                                                max_size=3)}),
        st.just({}),
        st.sampled_from([{"type": "string", "pattern": "^[0-9]+$"}, {"$ref": "#/$defs/x"},
                         {"type": "integer", "minimum": "zero"}, {"const": None},
                         {"type": ["integer", "string"]}, {"type": []}, {"not": {}}]),
    ),
    lambda inner: st.one_of(
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda ps: {"type": "object", "properties": ps},
                  st.dictionaries(st.text(max_size=3), inner, max_size=3)),
        st.builds(lambda opts: {"anyOf": opts}, st.lists(inner, max_size=3)),
        st.builds(lambda opts: {"oneOf": opts}, st.lists(inner, max_size=3)),
    ),
    max_leaves=8,
)


# found: a $ref to nothing loaded, then validation raised jsonschema's referencing error
@example({"": {"anyOf": [{"$ref": "#/$defs/x"}]}}, [], {"": None})
@given(st.dictionaries(st.text(max_size=4), _SCHEMA_PARTS, max_size=4),
       st.lists(st.text(max_size=4), max_size=3), st.dictionaries(st.text(max_size=4), _VALUES,
                                                                  max_size=4))
def test_random_json_schemas_load_or_fail_cleanly_and_validate_any_arguments(
        properties: dict[str, Any], required: list[str], args: dict[str, Any]) -> None:
    try:
        tool = schema_tool({"name": "rnd.fn", "parameters": {
            "type": "object", "properties": properties, "required": required}})
    except PluginLoadError as exc:
        assert exc.one_line()
        return
    try:
        tool.validator(args)
    except InvalidArgumentsError as exc:
        assert exc.one_line()
