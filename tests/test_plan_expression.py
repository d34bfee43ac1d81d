"""Tree plans as call expressions (`localagent/plan_expression.py`): exact round trips on
every reference plan of the suites, rejection of what is not a plan, and the token count
with the default model's real tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localagent.bench.suite import load_suite
from localagent.errors import PlanValidationError
from localagent.plan import plan_from_dict
from localagent.plan_expression import parse_expression, to_expression

SUITES = Path(__file__).resolve().parent.parent / "benchmarks" / "suites"
REFERENCE_PLANS = [t.solution for path in sorted(SUITES.glob("*.yaml"))
                   for t in load_suite(path).tasks if t.solution is not None]


def test_every_reference_plan_reads_back_the_same() -> None:
    assert len(REFERENCE_PLANS) > 300
    for plan in REFERENCE_PLANS:
        text = to_expression(plan)
        assert parse_expression(text) == plan, text


def test_nesting_fields_lists_and_literals() -> None:
    plan = {"function": "Math.Multiply", "args": {
        "value1": {"function": "Garage.GetCar", "args": {"plate": "K-77"},
                   "field": "items[0].price"},
        "value2": [1, 2.5, True, None, "x \"quoted\""],
        "value3": {"kind": "value", "value": {"a": [1]}},
        "value4": [{"function": "P.F", "args": {}}]}}
    text = to_expression(plan)
    assert text.startswith('Math.Multiply(value1=Garage.GetCar(plate="K-77")[\"items\"][0]')
    assert parse_expression(text) == plan
    plan_from_dict(parse_expression(text))  # a valid raw tree plan


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",  # a bare name called: no Plugin.Function
    "P.F(1)",  # positional argument
    "P.F(**{'a': 1})",
    "P.F(a=1 + 2)",  # an operation, not a literal
    "P.F(a=x)",  # a name is not a value
    "P.F(a={1, 2})",  # a set
    "P.F(a=1)[True]",
    "P.F(a=",
    "[P.F()]",
])
def test_what_is_not_a_plan_is_rejected(text: str) -> None:
    with pytest.raises(PlanValidationError):
        parse_expression(text)


def test_expression_is_fewer_tokens_with_the_real_tokenizer(default_model_path) -> None:
    """The default model's own vocabulary (the GGUF, vocab only): every reference plan
    costs fewer tokens as an expression than as the JSON tree."""
    from llama_cpp import Llama

    vocab = Llama(model_path=str(default_model_path), vocab_only=True, verbose=False)

    def count(text: str) -> int:
        return len(vocab.tokenize(text.encode(), add_bos=False, special=False))

    for plan in REFERENCE_PLANS:
        assert count(to_expression(plan)) < count(json.dumps(plan, ensure_ascii=False)), plan
