"""Answers taken from a record the tools returned (planners/observe.py, issue 44)."""

from __future__ import annotations

import pytest

from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.observe import is_record, observe
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry

BOOK = {"title": "Frankenstein", "author": "Mary Shelley", "year": 1818, "pages": 280}


class Library:
    """A lookup whose `-> dict` declares no keys: they are known only once it ran."""

    @tool
    def book(self, title: str) -> dict:
        """Look up a book by its title: its author, year and page count."""
        return {**BOOK, "title": title}


def test_observe_offers_the_records_values_after_their_paths() -> None:
    llm = ScriptedLLM(["pages: 280"])
    assert observe(llm, "goal", BOOK, PlannerSettings(), GenerationLog()) == 280
    constraint = llm.requests[0].constraint
    assert constraint is not None
    assert matches(constraint, "author: Mary Shelley")
    assert not matches(constraint, "280 pages")  # only the record's own values
    assert not matches(constraint, '{"pages": 280}')  # never the whole record
    assert "Frankenstein" in llm.requests[0].prompt  # the model sees the result


@pytest.mark.parametrize("value", [42, "text", None, [], {}, 2.5, True])
def test_a_value_that_is_no_record_is_the_answer_without_a_generation(value) -> None:
    llm = ScriptedLLM([])
    assert observe(llm, "goal", value, PlannerSettings(), GenerationLog()) == value
    assert llm.requests == []
    assert not is_record(value)


def test_nested_records_and_lists_are_reachable() -> None:
    order = {"id": 17, "items": [{"name": "tea", "price": 2.5}], "total": 42.5}
    llm = ScriptedLLM(["items[0].name: tea"])
    assert observe(llm, "goal", order, PlannerSettings(), GenerationLog()) == "tea"


GOALS = {  # planner -> (goal, expected): three languages over the four planners
    "tree": ("How many pages does the book Frankenstein have?", 280),
    "sequential": ("¿Cuántas páginas tiene el libro Frankenstein?", 280),
    "react": ("Wer hat das Buch Frankenstein geschrieben?", "Mary Shelley"),
    "tools": ("How many pages does the book Frankenstein have?", 280),
}


@pytest.mark.parametrize("planner", list(GOALS))
def test_real_model_answers_the_field_not_the_record(default_llm, planner: str) -> None:
    from localagent.agent import Agent

    registry = ToolRegistry()
    registry.add_plugin(Library())
    goal, expected = GOALS[planner]
    result = Agent(default_llm, registry=registry).run(goal, planner=planner)
    assert result.ok, result.error
    assert str(result.answer) == str(expected)


# --- a field the plan named before it saw the record (repair_field) -----------------------

ORDER = {"number": 23, "customer": "Li Wei", "total": 19.9, "placed": "2024-04-11"}


class Desk:
    @tool
    def order(self, number: int) -> dict:
        """Look up an order by its number: customer, total and the date it was placed."""
        return {**ORDER, "number": number}

    @tool
    def double(self, value: float) -> float:
        """Twice a number."""
        return value * 2


def _desk() -> ToolRegistry:
    registry = ToolRegistry()
    registry.add_plugin(Desk())
    return registry


def test_a_missing_field_is_chosen_again_among_the_records_own_parts() -> None:
    from localagent.agent import Agent

    plan = '{"function": "Desk.order", "args": {"number": 23}, "field": "date_placed"}'
    llm = ScriptedLLM([plan, 'placed: "2024-04-11"'])
    events: list = []
    result = Agent(llm, registry=_desk(), techniques="plain").run(
        "When was order 23 placed?", planner="tree", on_event=events.append)
    assert result.ok, result.error
    assert result.answer == "2024-04-11"
    repair = llm.requests[1]
    assert repair.constraint is not None and repair.constraint.name == "field-repair"
    assert matches(repair.constraint, "customer: \"Li Wei\"")
    assert not matches(repair.constraint, "date_placed: \"2024-04-11\"")  # only its parts
    assert "date_placed" in repair.prompt and "Li Wei" in repair.prompt
    repaired = [e.detail for e in events if getattr(e, "kind", "") == "field_repaired"]
    assert repaired == [{"access": "Desk.order(...).date_placed", "took": "placed"}]


def test_a_sequential_reference_to_a_missing_field_is_repaired_too() -> None:
    from localagent.agent import Agent

    plan = ('{"input": "", "subtasks": [{"function": "Desk.order", "args": {"number": 23}}, '
            '{"function": "Desk.double", "args": {"value": "$1.amount"}}]}')
    llm = ScriptedLLM([plan, "total: 19.9"])
    result = Agent(llm, registry=_desk(), techniques="plain").run(
        "What is twice the total of order 23?", planner="sequential")
    assert result.ok, result.error
    assert result.answer == 39.8


def test_a_field_that_exists_costs_no_generation() -> None:
    from localagent.agent import Agent

    plan = '{"function": "Desk.order", "args": {"number": 23}, "field": "placed"}'
    llm = ScriptedLLM([plan])
    result = Agent(llm, registry=_desk(), techniques="plain").run(
        "When was order 23 placed?", planner="tree")
    assert result.answer == "2024-04-11" and len(llm.requests) == 1


def test_real_model_takes_the_records_own_field_when_the_plan_guessed(default_llm) -> None:
    from localagent.agent import Agent

    result = Agent(default_llm, registry=_desk()).run(
        "An welchem Datum wurde Bestellung 23 aufgegeben?", planner="tree")
    assert result.ok, result.error
    assert result.answer == "2024-04-11"


def test_the_model_may_choose_none_and_an_index_past_the_end_is_never_repaired() -> None:
    from localagent.agent import Agent

    plan = '{"function": "Desk.order", "args": {"number": 23}, "field": "date_placed"}'
    llm = ScriptedLLM([plan, "(none of these)"])
    result = Agent(llm, registry=_desk(), techniques="plain").run(
        "When was order 23 placed?", planner="tree")
    assert not result.ok and "no field 'date_placed'" in (result.error or "")
    from localagent.plan_nodes import FieldAccessError, MissingKeyError, follow

    def missing_key(value, path) -> bool:  # what a repair may choose again
        try:
            follow(value, path)
        except FieldAccessError as exc:
            return isinstance(exc, MissingKeyError)
        return False

    assert missing_key({"a": 1}, ("b",)) and not missing_key([1, 2], (5,))
    assert not missing_key({"a": [1]}, ("a", 3)) and missing_key({"a": [{}]}, ("a", 0, "x"))
