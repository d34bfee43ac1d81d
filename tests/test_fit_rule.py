"""One rule decides whether a call's result may stand for an argument (`grammar/types.py`):
the grammar asks `fits` (the types promise it), the plan check `may_fit` (some value could
pass), the executor `passed_as_text` (a result goes into a string parameter as its text).
Every pairing the grammar admits passes the plan check and runs."""

from __future__ import annotations

import itertools
from typing import Literal

import pytest

from localagent.errors import PlanValidationError
from localagent.executor import Executor
from localagent.grammar.types import as_text, fits, may_fit, passed_as_text
from localagent.plan import plan_from_dict, validate
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry, default_registry

SCHEMAS = {
    "untyped": {}, "string": {"type": "string"}, "integer": {"type": "integer"},
    "number": {"type": "number"}, "boolean": {"type": "boolean"},
    "array": {"type": "array", "items": {"type": "string"}}, "object": {"type": "object"},
    "null": {"type": "null"}, "names": {"type": "string", "enum": ["Ann", "Bo"]},
    "cars": {"type": "string", "enum": ["Mini", "Van"]}, "digits": {"enum": ["1", "2"]},
    "small": {"type": "integer", "enum": [1, 2]}, "const": {"const": "Ann"},
    "optional text": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "optional number": {"anyOf": [{"type": "number"}, {"type": "null"}]},
}


@pytest.mark.parametrize(("param", "returns"), list(itertools.product(SCHEMAS, SCHEMAS)))
def test_whatever_the_grammar_admits_the_plan_check_admits(param: str, returns: str) -> None:
    if fits(SCHEMAS[param], SCHEMAS[returns]):
        assert may_fit(SCHEMAS[param], SCHEMAS[returns])


@pytest.mark.parametrize(("param", "returns", "expected"), [
    ("number", "array", False),  # no list is a number
    ("array", "number", False),
    ("object", "string", False),
    ("number", "string", True),  # "42" is coerced; the grammar does not promise it
    ("integer", "number", True),
    ("number", "untyped", True),  # an unknown result: the run decides
    ("untyped", "array", True),
    ("string", "array", True),  # passed as its JSON text
    ("names", "cars", False),  # both declare their values and share none
    ("names", "small", False),
    ("digits", "small", True),  # 1 is passed as "1"
    ("names", "string", True),  # a lookup's string may be one of the names
])
def test_may_fit(param: str, returns: str, expected: bool) -> None:
    assert may_fit(SCHEMAS[param], SCHEMAS[returns]) is expected


@pytest.mark.parametrize(("param", "value", "text"), [
    ("string", 3, "3"),
    ("string", 2.5, "2.5"),
    ("string", True, "true"),
    ("string", ["a", "b"], '["a", "b"]'),
    ("string", {"k": "é"}, '{"k": "é"}'),
    ("optional text", 3, "3"),
    ("digits", 1, "1"),
    ("string", "a", None),  # already text
    ("optional text", None, None),  # null is admitted as it is
    ("number", 3, None),
    ("untyped", 3, None),
    ("array", ["a"], None),
])
def test_passed_as_text(param: str, value: object, text: str | None) -> None:
    passed = passed_as_text(SCHEMAS[param], value)
    assert passed is (text is not None)
    if text is not None:
        assert as_text(value) == text


def test_a_ref_resolves_against_the_parameters() -> None:
    params = {"type": "object", "properties": {"who": {"$ref": "#/$defs/Who"}},
              "$defs": {"Who": {"type": "string", "enum": ["Ann", "Bo"]}}}
    who = params["properties"]["who"]
    assert not may_fit(who, SCHEMAS["cars"], params)
    assert may_fit(who, SCHEMAS["string"], params)
    assert passed_as_text(who, 1, params)


class Garage:
    """Lookups whose declared values do not meet."""

    @tool
    def driver(self, car: Literal["Mini", "Van"]) -> Literal["Ann", "Bo"]:
        """Who drives a car."""
        return "Ann" if car == "Mini" else "Bo"

    @tool
    def mileage(self, car: Literal["Mini", "Van"]) -> int:
        """A car's mileage."""
        return 12000 if car == "Mini" else 800


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    reg = default_registry(examples=True)
    reg.add_plugin(Garage())
    return reg


def test_a_list_result_into_a_string_parameter_passes_and_runs_as_text(registry) -> None:
    plan = plan_from_dict({"function": "TextPlugin.uppercase", "args": {
        "input": {"function": "PersonalAssistant.ListPeople", "args": {}}}})
    validate(plan, registry)
    result = Executor(registry).run_tree_sync(plan)
    assert result.error is None and result.value.startswith('["FURINA", ')


def test_results_whose_values_cannot_be_the_parameters_are_rejected(registry) -> None:
    plan = plan_from_dict({"function": "Garage.mileage", "args": {
        "car": {"function": "Garage.driver", "args": {"car": "Mini"}}}})
    with pytest.raises(PlanValidationError) as info:
        validate(plan, registry)
    assert info.value.problems == (  # type: ignore[attr-defined]
        ("root.args.car: Garage.driver returns one of 'Ann', 'Bo', but Garage.mileage "
         "expects one of 'Mini', 'Van' here"),)


def test_a_step_reference_is_judged_by_the_same_rule(registry) -> None:
    plan = plan_from_dict({"subtasks": [
        {"function": "Garage.driver", "args": {"car": "Van"}},
        {"function": "Garage.mileage", "args": {"car": "$1"}}]})
    with pytest.raises(PlanValidationError, match=r"\$1 \(Garage.driver\) is one of"):
        validate(plan, registry)
