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
    "P.F(a=[1, P.G()][0])",  # a subscript of a list
    "P.F(a=1)[True]",
    "P.F(a=",
    "[P.F()]",
])
def test_what_is_not_a_plan_is_rejected(text: str) -> None:
    with pytest.raises(PlanValidationError):
        parse_expression(text)


def test_expression_is_fewer_tokens_with_the_real_tokenizer(small_model_path) -> None:
    """The default model's own vocabulary (the GGUF, vocab only): every reference plan
    costs fewer tokens as an expression than as the JSON tree."""
    from llama_cpp import Llama

    vocab = Llama(model_path=str(small_model_path), vocab_only=True, verbose=False)

    def count(text: str) -> int:
        return len(vocab.tokenize(text.encode(), add_bos=False, special=False))

    for plan in REFERENCE_PLANS:
        assert count(to_expression(plan)) < count(json.dumps(plan, ensure_ascii=False)), plan


def _suite_tasks(name: str) -> list:
    return [t for t in load_suite(SUITES / f"{name}.yaml").tasks if t.solution is not None]


@pytest.mark.parametrize("suite", ["generalisation", "structured"])
def test_expression_grammar_admits_every_reference_plan(suite: str) -> None:
    """No silent exclusion: the expression grammar over a task's tools admits its reference
    plan (nested calls, fields of results, lists)."""
    from localagent.bench.tools import build_registry
    from localagent.grammar.expression import expression_plan
    from localagent.llm.constrained import matches

    for task in _suite_tasks(suite):
        grammar = expression_plan(build_registry(task).specs())
        assert matches(grammar, to_expression(task.solution)), task.id


def test_expression_grammar_admits_only_real_functions_and_fitting_calls() -> None:
    from localagent.grammar.expression import expression_plan
    from localagent.llm.constrained import matches
    from localagent.tools.registry import default_registry

    grammar = expression_plan(default_registry(examples=True).specs())
    total = 'DemoPlugin.Total(value1=DemoPlugin.GetInvoice(company="A"), value2=2)'
    assert matches(grammar, total)
    assert not matches(grammar, total.replace("Total", "Totl"))  # no such function
    assert not matches(grammar, total.replace('"A"', '"Z"'))  # not one of the companies
    assert not matches(grammar, total.replace("value2=2", "value2=PersonalAssistant"
                                              '.GetPersonCity(name="Alice")'))  # a string
    assert not matches(grammar, total.replace("value1=", "value1 = "))  # fixed spacing


def test_real_model_plans_as_an_expression(small_llm) -> None:
    """The tree planner with `expression` on the real default model (greedy, the example
    plugins offered whole): the plan is a call expression that executes to the answer."""
    from localagent.agent import Agent
    from localagent.planners.base import PlannerSettings
    from localagent.planners.techniques import Techniques

    agent = Agent(small_llm, [], examples=True, settings=PlannerSettings(
        temperature=0.0, seed=0, techniques=Techniques.parse("mentions+expression")))
    result = agent.run("How old is Alice?", planner="tree")
    assert result.answer == 34, result.to_dict()
    assert result.to_dict()["plan"]["root"]["function"] == "PersonalAssistant.GetPersonAge"
