"""Schemas derived from signatures, type hints and docstrings; argument coercion."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from localagent import tool
from localagent.errors import InvalidArgumentsError, PluginLoadError
from localagent.tools.docstrings import parse_docstring
from localagent.tools.registry import Tool, ToolRegistry


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str = "Athens"


class Opaque:
    """Not a type pydantic can describe."""


class Order(BaseModel):
    item: str
    quantity: int
    ship_to: Address


def spec_of(func, plugin: str = "P"):
    return Tool.from_function(func, plugin=plugin).spec


def test_basic_types_and_defaults() -> None:
    @tool
    def f(text: str, count: int, ratio: float, flag: bool = False) -> str:
        """Do a thing."""
        return text

    spec = spec_of(f)
    props = spec.parameters["properties"]
    assert [props[k]["type"] for k in ("text", "count", "ratio", "flag")] == [
        "string",
        "integer",
        "number",
        "boolean",
    ]
    assert props["flag"]["default"] is False
    assert spec.parameters["required"] == ["text", "count", "ratio"]
    assert spec.parameters["additionalProperties"] is False
    assert spec.parameters["type"] == "object"
    assert spec.returns == {"type": "string"}
    assert spec.description == "Do a thing."
    assert spec.qualified_name == "P.f" and spec.kind == "native"


def test_lists_enums_literal_optional() -> None:
    @tool
    def f(
        values: list[int],
        tags: list[str] | None,
        color: Color,
        mode: Literal["fast", "slow"] = "fast",
        limit: int | None = None,
    ) -> list[float]:
        return []

    spec = spec_of(f)
    props = spec.parameters["properties"]
    assert props["values"] == {"type": "array", "items": {"type": "integer"}}
    assert {"type": "null"} in props["tags"]["anyOf"]
    assert props["color"]["enum"] == ["red", "green"]
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["default"] == "fast"
    assert {"type": "null"} in props["limit"]["anyOf"]
    assert set(spec.parameters["required"]) == {"values", "tags", "color"}
    assert spec.returns == {"type": "array", "items": {"type": "number"}}
    assert "$defs" not in json.dumps(spec.parameters) and "$ref" not in json.dumps(spec.parameters)


def test_pydantic_models_are_inlined_without_refs() -> None:
    @tool
    def place(order: Order) -> Order:
        """Place an order."""
        return order

    spec = spec_of(place)
    text = json.dumps([spec.parameters, spec.returns])
    assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    order = spec.parameters["properties"]["order"]
    assert order["type"] == "object"
    assert order["properties"]["ship_to"]["properties"]["city"]["default"] == "Athens"
    assert spec.returns["properties"]["quantity"] == {"type": "integer"}


def test_a_property_named_title_is_kept() -> None:
    @tool
    def f(title: str) -> str:
        return title

    assert "title" in spec_of(f).parameters["properties"]


def test_descriptions_from_annotated_field_and_docstring() -> None:
    @tool
    def f(
        a: Annotated[int, "From a string."],
        b: Annotated[int, Field(description="From a Field.", ge=0)],
        c: int,
        d: str = "x",
    ) -> None:
        """Summary line
        continues here.

        Longer text that is not part of the summary.

        Args:
            a: docstring loses to Annotated.
            b: docstring loses to Field.
            c (int): From the docstring,
                over two lines.
            d: Also from the docstring.
        """

    spec = spec_of(f)
    props = spec.parameters["properties"]
    assert props["a"]["description"] == "From a string."
    assert props["b"]["description"] == "From a Field." and props["b"]["minimum"] == 0
    assert props["c"]["description"] == "From the docstring, over two lines."
    assert props["d"]["description"] == "Also from the docstring."
    assert spec.description == "Summary line continues here."
    assert spec.returns == {"type": "null"}


def test_sphinx_and_numpy_docstrings() -> None:
    sphinx = parse_docstring("""Add numbers.

    :param x: the first
    :param int y: the second
    :returns: the sum
    """)
    assert sphinx.summary == "Add numbers." and sphinx.params == {
        "x": "the first",
        "y": "the second",
    }
    numpy = parse_docstring("""Add numbers.

    Parameters
    ----------
    x : int
        The first.
    y : int
        The second.

    Returns
    -------
    int
    """)
    assert numpy.summary == "Add numbers." and numpy.params == {
        "x": "The first.",
        "y": "The second.",
    }


def test_explicit_name_and_description_win() -> None:
    @tool(name="Renamed", description="Explicit.")
    def f(x: int) -> int:
        """Docstring summary."""
        return x

    spec = spec_of(f)
    assert spec.name == "Renamed" and spec.description == "Explicit."


def test_unannotated_return_is_empty_schema_and_methods_drop_self() -> None:
    class Plugin:
        @tool
        def m(self, x):
            return x

    spec = Tool.from_function(Plugin().m, plugin="Plugin").spec
    assert spec.returns == {}
    assert list(spec.parameters["properties"]) == ["x"]


def test_coercion_and_every_problem_listed() -> None:
    @tool
    def f(count: int, ratio: float, flag: bool, name: str, tags: list[int] = []) -> int:  # noqa: B006
        return count

    registry = ToolRegistry()
    registry.add_function(f, "P")
    args = registry.validate_args(
        "P.f", {"count": "2000", "ratio": "0.5", "flag": "true", "name": 42, "tags": ["1", 2]}
    )
    assert args == {"count": 2000, "ratio": 0.5, "flag": True, "name": "42", "tags": [1, 2]}
    with pytest.raises(InvalidArgumentsError) as info:
        registry.validate_args("P.f", {"count": "many", "flag": True, "name": "x", "bogus": 1})
    message = str(info.value)
    assert "argument 'count'" in message and "'many'" in message
    assert "missing argument 'ratio'" in message
    assert "unknown argument 'bogus'" in message


def test_parameter_names_that_clash_with_basemodel_attributes() -> None:
    @tool
    def f(json: str, copy: int, model_config: str = "a") -> str:
        return json + str(copy) + model_config

    registry = ToolRegistry()
    registry.add_function(f, "P")
    assert set(registry.spec("P.f").parameters["properties"]) == {"json", "copy", "model_config"}
    assert registry.invoke("P.f", {"json": "x", "copy": "3"}).value == "x3a"


def test_unsupported_signatures_fail_at_registration() -> None:
    def star(*args: int) -> int:
        return 0

    def opaque(x: Opaque) -> int:
        return 0

    with pytest.raises(PluginLoadError, match=r"\*args"):
        Tool.from_function(star, plugin="P")
    with pytest.raises(PluginLoadError, match="cannot derive a schema for P.opaque"):
        Tool.from_function(opaque, plugin="P")

    def local_type(x: LocalOnly) -> int:  # noqa: F821 - a name get_type_hints cannot resolve
        return 0

    with pytest.raises(PluginLoadError, match="cannot read the signature of P.local_type"):
        Tool.from_function(local_type, plugin="P")
    with pytest.raises(PluginLoadError):
        tool(name="not valid")
