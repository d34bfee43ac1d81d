"""Plan data: JSON round trips in both forms, and validation that lists every problem with
its exact path, against the real registry and the real example plugins."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from localagent.errors import PlanValidationError
from localagent.plan import (
    Call,
    Ref,
    SequentialPlan,
    Step,
    TreePlan,
    Value,
    call_from_dict,
    plan_from_dict,
    plan_from_json,
    plan_json_schema,
    plan_to_raw,
    validate,
)
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry, default_registry


def call(function: str, **args: Any) -> dict[str, Any]:
    return {"function": function, "args": args}


def invoice(company: str) -> dict[str, Any]:
    return call("DemoPlugin.GetInvoice", company=company)


INVOICE_TREE = call(
    "DemoPlugin.Diff",
    value1=call("DemoPlugin.Total", value1=invoice("C"), value2=invoice("F")),
    value2=call("DemoPlugin.Total", value1=invoice("A"), value2=invoice("E")),
)


class WordsPlugin:
    """A tool whose return type (a list) fits no number parameter."""

    @tool
    def split(self, input: str) -> list[str]:
        """Split a text into words."""
        return input.split()


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    reg = default_registry(examples=True)
    reg.add_plugin(WordsPlugin())
    return reg


def problems_of(plan: SequentialPlan | TreePlan, registry: ToolRegistry, **kw: Any) -> list[str]:
    with pytest.raises(PlanValidationError) as info:
        validate(plan, registry, **kw)
    return list(info.value.problems)  # type: ignore[attr-defined]


# --- data and JSON ------------------------------------------------------------------------


def test_raw_tree_becomes_typed_nodes_and_round_trips() -> None:
    plan = plan_from_dict(INVOICE_TREE)
    assert isinstance(plan, TreePlan)
    assert plan.root.function == "DemoPlugin.Diff"
    total = plan.root.args["value1"]
    assert isinstance(total, Call) and total.function == "DemoPlugin.Total"
    assert plan.root.depth() == 3
    assert plan_from_json(plan.to_json()) == plan
    assert plan_from_dict(plan_to_raw(plan)) == plan
    assert plan_to_raw(plan) == INVOICE_TREE


def test_references_values_and_lists_in_both_forms() -> None:
    raw = {
        "input": "hello",
        "subtasks": [
            call("TextPlugin.uppercase"),
            {**call("P.F", a="$1", b="#E1", c="$input", d=["x", "$up", 2, {"k": 1}],
                    e={"kind": "value", "value": "$1"}), "output": "up"},
        ],
    }
    plan = plan_from_dict(raw)
    assert isinstance(plan, SequentialPlan) and plan.input == "hello"
    args = plan.steps[1].args
    assert args["a"] == Ref(name="1") and args["b"] == Ref(name="1", sigil="#E")
    assert args["c"] == Ref(name="input")
    assert args["d"] == ("x", Ref(name="up"), 2, Value(value={"k": 1}))
    assert args["e"] == Value(value="$1")  # a literal that looks like a reference
    assert plan.steps[1].output == "up"
    assert plan_from_json(plan.to_json()) == plan
    assert plan_from_dict(plan_to_raw(plan)) == plan
    assert plan_to_raw(plan)["subtasks"][1]["args"]["b"] == "#E1"


def test_nodes_are_immutable() -> None:
    plan = plan_from_dict(INVOICE_TREE)
    with pytest.raises(ValidationError):
        plan.root.function = "DemoPlugin.Total"  # type: ignore[misc]
    step = Step(function="TextPlugin.uppercase")
    assert step.call == Call(function="TextPlugin.uppercase")


def test_plan_schema_is_discriminated_by_kind() -> None:
    schema = plan_json_schema()
    text = json.dumps(schema)
    for kind in ('"sequential"', '"tree"', '"call"', '"ref"', '"step"'):
        assert kind in text
    assert schema["discriminator"]["propertyName"] == "kind"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"function": 3}, "root.function: must be a non-empty string"),
        ({"subtasks": [{"function": "A.b", "args": [1]}]},
         "subtasks[0].args: must be an object, got a list"),
        ({"subtasks": [5]}, "subtasks[0]: a call must be an object, got an integer"),
        ({"subtasks": [{"function": "A.b", "output": "input"}]},
         "subtasks[0].output: 'input' is not a usable name (a-z, 0-9, _)"),
        ({"steps_": []}, 'plan: expected a sequential plan ("subtasks") or a call ("function")'),
        ([1], "plan: must be a JSON object, got a list"),
    ],
)
def test_malformed_json_is_rejected_with_a_path(data: Any, expected: str) -> None:
    with pytest.raises(PlanValidationError) as info:
        plan_from_dict(data)
    assert expected in info.value.problems  # type: ignore[attr-defined]


def test_not_json_is_a_plan_validation_error() -> None:
    with pytest.raises(PlanValidationError, match="not valid JSON"):
        plan_from_json("{'function': ")


def test_call_from_dict_accepts_the_raw_form() -> None:
    got = call_from_dict(call("DemoPlugin.Total", value1=1, value2="$x"))
    assert got == Call(function="DemoPlugin.Total", args={"value1": 1, "value2": Ref(name="x")})


# --- validation against the registry -------------------------------------------------------


def test_valid_invoice_plan_passes(registry: ToolRegistry) -> None:
    validate(plan_from_dict(INVOICE_TREE), registry)


def test_unknown_function_with_suggestion_at_exact_path(registry: ToolRegistry) -> None:
    plan = plan_from_dict({
        "input": "",
        "subtasks": [
            invoice("A"),
            invoice("B"),
            call("DemoPlugin.Diff", value1=call("DemoPlugin.Totl", value1=1, value2=2),
                 value2="$1"),
        ],
    })
    assert problems_of(plan, registry) == [
        ('subtasks[2].args.value1: unknown function "DemoPlugin.Totl"; '
        "did you mean DemoPlugin.Total?")
    ]


def test_every_problem_is_listed_in_one_error(registry: ToolRegistry) -> None:
    plan = plan_from_dict(call(
        "DemoPlugin.Diff",
        value1=call("DemoPlugin.Total", value1="abc", value2=invoice("Q")),
        value2=call("DemoPlugin.GetInvoice", compny="A"),
        amount=1,
    ))
    problems = problems_of(plan, registry)
    assert problems == [
        ("root.args.value1.args.value2.args.company: expected one of 'A', 'B', 'C', 'D', 'E', "
        "'F', got a string ('Q')"),
        "root.args.value1.args.value1: expected a number, got a string ('abc')",
        ("root.args.value2.args.compny: unknown argument of DemoPlugin.GetInvoice; "
        "did you mean company?"),
        "root.args.value2.args.company: missing required argument of DemoPlugin.GetInvoice",
        "root.args.amount: unknown argument of DemoPlugin.Diff (it takes value1, value2)",
    ]
    with pytest.raises(PlanValidationError) as info:
        validate(plan, registry)
    assert str(info.value).startswith("invalid plan, 5 problems: (1) root.args.value1.args")


def test_wrong_literal_type_and_lax_numbers(registry: ToolRegistry) -> None:
    ok = plan_from_dict(call("DemoPlugin.Total", value1="2000", value2=1.5))
    validate(ok, registry)  # the registry coerces numeric strings, so the check does too
    bad = plan_from_dict(call("DemoPlugin.Total", value1=[1], value2=True))
    assert problems_of(bad, registry) == [
        "root.args.value1: expected a number, got a list",
        "root.args.value2: expected a number, got a boolean (True)",
    ]


def test_nested_call_return_type_must_fit(registry: ToolRegistry) -> None:
    plan = plan_from_dict(call(
        "DemoPlugin.Total", value1=call("WordsPlugin.split", input="a b"), value2=1))
    assert problems_of(plan, registry) == [
        ("root.args.value1: WordsPlugin.split returns an array, but DemoPlugin.Total expects "
        "a number here")
    ]
    # a number into a string parameter is fine: the executor passes it as text
    validate(plan_from_dict(call("TextPlugin.uppercase", input=invoice("A"))), registry)


def test_missing_argument_but_piped_input_is_not_missing(registry: ToolRegistry) -> None:
    plan = plan_from_dict({"input": "hi", "subtasks": [
        call("TextPlugin.uppercase"), call("DemoPlugin.Total", value1=1)]})
    assert problems_of(plan, registry) == [
        "subtasks[1].args.value2: missing required argument of DemoPlugin.Total"
    ]


def test_cycle_among_references(registry: ToolRegistry) -> None:
    plan = plan_from_dict({"subtasks": [
        {**call("DemoPlugin.Total", value1="$b", value2=1), "output": "a"},
        {**call("DemoPlugin.Total", value1="$a", value2=2), "output": "b"},
    ]})
    assert problems_of(plan, registry) == [
        ("subtasks[0].args.value1: reference $b forms a cycle: subtasks[0] -> subtasks[1] "
        "-> subtasks[0]")
    ]


def test_self_reference_is_a_cycle_and_forward_reference_is_not_yet(
    registry: ToolRegistry,
) -> None:
    plan = plan_from_dict({"subtasks": [
        call("DemoPlugin.Total", value1="#E1", value2="$3"),
        invoice("A"),
        invoice("B"),
        call("DemoPlugin.Total", value1="$9", value2="$nothing"),
    ]})
    assert problems_of(plan, registry) == [
        "subtasks[0].args.value1: reference #E1 forms a cycle: subtasks[0] -> subtasks[0]",
        ("subtasks[0].args.value2: reference $3 is not available yet (produced by "
        "subtasks[2], which runs later)"),
        "subtasks[3].args.value1: reference $9 does not exist (the plan has 4 steps)",
        'subtasks[3].args.value2: reference $nothing does not exist (no step outputs "nothing")',
    ]


def test_backward_references_and_names_are_fine(registry: ToolRegistry) -> None:
    plan = plan_from_dict({"subtasks": [
        {**invoice("C"), "output": "c"},
        invoice("F"),
        call("DemoPlugin.Total", value1="$c", value2="#E2"),
    ]})
    validate(plan, registry)


def test_reference_in_a_tree_plan_does_not_exist(registry: ToolRegistry) -> None:
    plan = plan_from_dict(call("DemoPlugin.Total", value1="$1", value2=2))
    assert problems_of(plan, registry) == [
        "root.args.value1: reference $1 does not exist (a tree plan has no earlier results)"
    ]


def test_depth_beyond_the_limit(registry: ToolRegistry) -> None:
    node: dict[str, Any] = invoice("A")
    for _ in range(4):
        node = call("DemoPlugin.Total", value1=node, value2=1)
    plan = plan_from_dict(node)  # depth 5
    assert plan.root.depth() == 5
    assert problems_of(plan, registry) == [
        ("root.args.value1.args.value1.args.value1.args.value1: nesting depth exceeds the "
        "limit of 4 calls")
    ]
    validate(plan, registry, max_depth=5)


def test_absurdly_deep_json_is_a_plan_error_not_a_crash() -> None:
    deep = '{"function": "A.b", "args": {"x": ' * 5000 + "1" + "}}" * 5000
    with pytest.raises(PlanValidationError, match="nested too deeply"):
        plan_from_json(deep)
    node: dict[str, Any] = {"function": "A.b", "args": {}}
    for _ in range(3000):
        node = {"function": "A.b", "args": {"x": node}}
    with pytest.raises(PlanValidationError, match="nested too deeply"):
        plan_from_dict(node)
    node = {"function": "A.b", "args": {}}
    for _ in range(300):  # readable by Python, too deep for pydantic's validator
        node = {"function": "A.b", "args": {"x": node}}
    with pytest.raises(PlanValidationError) as info:
        plan_from_dict(node)
    assert info.value.problems == ("plan: nested too deeply to read",)  # type: ignore[attr-defined]
