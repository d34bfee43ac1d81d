"""Typed answers (answer_type.py, planners/typed_answer.py; issue 46): every kind of
declared type becomes a grammar and a parser; the answer step reads the results; a type
that cannot become a grammar fails before any model work."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Literal, TypedDict

import pytest
from outlines.types import CFG, JsonSchema, Regex, email
from pydantic import BaseModel

from localagent.agent import Agent
from localagent.answer_type import AnswerTypeError, answer_type, answer_type_from_file
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.typed_answer import typed_answer
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry


class Book(BaseModel):
    title: str
    pages: int


class Length(BaseModel):  # no result has these keys: the model writes it from the results
    book: str
    pages: int


@dataclasses.dataclass
class Span:
    start: int
    end: int


class Place(TypedDict):
    city: str
    country: str


def _fits(spec, text: str, value) -> None:
    kind = answer_type(spec)
    assert matches(kind.constraint, text), (spec, text)
    assert kind.parse(text) == value


def test_python_types_become_grammars_and_parse_to_their_values() -> None:
    _fits(int, "42", 42)
    _fits(float, "2.5", 2.5)
    _fits(bool, "True", True)
    _fits(str, '"Mary Shelley"', "Mary Shelley")
    _fits(datetime.date, "2024-03-01", datetime.date(2024, 3, 1))
    _fits(Literal["ja", "nein"], "nein", "nein")
    _fits(list[int], "[1, 2]", [1, 2])
    _fits(Book, '{"title": "Beloved", "pages": 324}', Book(title="Beloved", pages=324))
    _fits(Span, '{"start": 1, "end": 4}', Span(1, 4))
    _fits(Place, '{"city": "Lyon", "country": "France"}', {"city": "Lyon", "country": "France"})


def test_the_grammar_refuses_what_the_type_refuses() -> None:
    assert not matches(answer_type(int).constraint, "42 pages")
    assert not matches(answer_type(Literal["ja", "nein"]).constraint, "vielleicht")
    assert not matches(answer_type(Book).constraint, '{"title": "Beloved"}')  # pages required
    assert not matches(answer_type(Book).constraint, '{"title": "Beloved", "pages": "many"}')
    assert not matches(answer_type(datetime.date).constraint, "March 1st")


def test_outlines_types_and_json_schemas() -> None:
    _fits(Regex(r"[A-Z]{3}"), "EUR", "EUR")
    _fits(email, "ada@example.org", "ada@example.org")
    assert not matches(answer_type(email).constraint, "ada at example")
    _fits(CFG('start: "yes" | "no"'), "yes", "yes")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    _fits(JsonSchema(schema), '{"n": 3}', {"n": 3})
    _fits(schema, '{"n": 3}', {"n": 3})


class Optional_(BaseModel):
    city: str | None = None
    rank: int | None = None


def test_structured_types_parse_from_json_and_text_stays_text() -> None:
    _fits(int | None, "null", None)
    _fits(tuple[int, str], '[1, "a"]', (1, "a"))
    _fits(list[Place], '[{"city": "Lyon", "country": "France"}]',
          [{"city": "Lyon", "country": "France"}])
    kind = answer_type(str)
    assert kind.parse('"Mary Shelley"') == "Mary Shelley"
    with pytest.raises(ValueError):
        kind.parse('"C:\\path')  # never the raw text with its quotes
    with pytest.raises(ValueError):
        answer_type(Regex(r"[A-Z]{3}")).parse("eur")  # checked even without the grammar


def test_a_record_stands_for_the_answer_only_with_every_field_of_the_type() -> None:
    kind = answer_type(Optional_)
    with pytest.raises(ValueError):
        kind.accepts({"total": 3})  # defaults would fill in what no result said
    assert kind.accepts({"city": "Lyon", "rank": 2, "extra": 1}) == Optional_(city="Lyon",
                                                                             rank=2)


def test_dump_gives_json_data() -> None:
    assert answer_type(Book).dump(Book(title="B", pages=1)) == {"title": "B", "pages": 1}
    assert answer_type(datetime.date).dump(datetime.date(2024, 3, 1)) == "2024-03-01"
    assert answer_type(Span).dump(Span(1, 2)) == {"start": 1, "end": 2}


class Opaque:  # no schema: pydantic cannot describe it
    pass


@pytest.mark.parametrize("spec, words", [
    (Opaque, "cannot use Opaque"), (len, "cannot use len"),
    ({"type": "nonsense"}, "not a valid JSON schema"),
    (CFG("start: ("), "cannot become a grammar")])
def test_a_type_that_cannot_become_a_grammar_is_one_usage_error(spec, words) -> None:
    with pytest.raises(AnswerTypeError) as info:
        answer_type(spec)
    assert words in info.value.one_line() and "\n" not in info.value.one_line()
    assert info.value.exit_code == 2


def test_schema_files(tmp_path) -> None:
    good = tmp_path / "book.json"
    good.write_text(json.dumps(Book.model_json_schema()))
    kind = answer_type_from_file(good)
    assert kind.parse('{"title": "B", "pages": 3}') == {"title": "B", "pages": 3}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for path, words in ((bad, "is not JSON"), (tmp_path / "none.json", "cannot read"),):
        with pytest.raises(AnswerTypeError, match=words):
            answer_type_from_file(path)


BOOK = {"title": "Frankenstein", "author": "Mary Shelley", "year": 1818, "pages": 280}
STEPS = [{"kind": "call_finished", "function": "Library.book", "args": {"title": "Frankenstein"},
          "result": BOOK, "error": None}]


def test_the_step_shows_the_results_and_writes_under_the_grammar() -> None:
    llm = ScriptedLLM(['{"book": "Frankenstein", "pages": 280}'])
    value = typed_answer(llm, "How long is Frankenstein?", BOOK, STEPS, answer_type(Length),
                         PlannerSettings(), GenerationLog())
    assert value == Length(book="Frankenstein", pages=280)
    request = llm.requests[0]
    assert "Mary Shelley" in request.prompt and "How long is Frankenstein?" in request.prompt
    assert request.constraint == answer_type(Length).constraint


def test_an_answer_that_already_is_the_type_costs_no_generation() -> None:
    llm = ScriptedLLM([])
    assert typed_answer(llm, "goal", 280, STEPS, answer_type(int), PlannerSettings(),
                        GenerationLog()) == 280
    # a record holding the model's fields (and more) is the instance
    assert typed_answer(llm, "goal", BOOK, STEPS, answer_type(Book), PlannerSettings(),
                        GenerationLog()) == Book(title="Frankenstein", pages=280)
    assert llm.requests == []


class Library:
    @tool
    def book(self, title: str) -> dict:
        """Look up a book by its title: its author, year and page count."""
        return {**BOOK, "title": title}


def test_agent_run_with_an_output_type_returns_the_instance_and_dumps_it() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Library())
    llm = ScriptedLLM(['{"function": "Library.book", "args": {"title": "Frankenstein"}}',
                       '{"book": "Frankenstein", "pages": 280}'])
    agent = Agent(llm, registry=registry, techniques="plain")
    result = agent.run("How long is Frankenstein?", planner="tree", output_type=Length)
    assert result.ok, result.error
    assert result.answer == Length(book="Frankenstein", pages=280)
    assert result.to_dict()["answer"] == {"book": "Frankenstein", "pages": 280}
    assert len(llm.requests) == 2  # the plan, the typed answer (observe gives way to it)


def test_a_bad_output_type_fails_before_any_model_work() -> None:
    llm = ScriptedLLM([])
    with pytest.raises(AnswerTypeError):
        Agent(llm, registry=ToolRegistry()).run("goal", output_type=Opaque)
    assert llm.requests == []


# --- real models ---------------------------------------------------------------------------


class Facts(BaseModel):  # other names than the record's: the model maps them
    writer: str
    page_count: int


@pytest.mark.parametrize("planner", ["tree", "tools"])
def test_real_model_fills_a_pydantic_answer_from_the_results(default_llm, planner) -> None:
    registry = ToolRegistry()
    registry.add_plugin(Library())
    result = Agent(default_llm, registry=registry).run(
        "Who wrote Frankenstein and how many pages does it have?", planner=planner,
        output_type=Facts)
    assert result.ok, result.error
    assert isinstance(result.answer, Facts)
    assert result.answer == Facts(writer="Mary Shelley", page_count=280)


def test_real_model_answers_a_literal_on_a_german_goal(default_llm) -> None:
    from localagent.tools.examples.weather import WeatherPlugin

    registry = ToolRegistry()
    registry.add_plugin(WeatherPlugin())
    agent = Agent(default_llm, registry=registry)
    result = agent.run("Hat es heute in London geregnet?", planner="tools",
                       output_type=Literal["yes", "no"])
    assert result.ok, result.error
    assert result.answer in ("yes", "no")
    called = [c["function"] for s in result.steps for c in s.get("calls", [])]
    assert any(f.startswith("WeatherPlugin.") for f in called), result.steps
    assert result.answer == "yes"  # London's offline weather: 4.2 mm of rain today
