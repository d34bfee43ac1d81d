"""The filter's query translation (`retrieval/translation.py`): scripted contract tests, and
real ones with MiniLM, Chroma and the default model."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.llm.scripted import ScriptedLLM
from localagent.planners.base import select_specs
from localagent.retrieval import FilterOptions, ToolIndex
from localagent.retrieval.translation import EXAMPLES, QueryTranslator
from localagent.tools.registry import ToolRegistry

TOOLS = [
    ("Books", "GetAuthor", "Get the name of the author who wrote a book."),
    ("Books", "CountBooks", "Count the books in the library."),
    ("Weather", "GetForecast", "Get the weather forecast for a city."),
    ("Music", "PlaySong", "Play a song by its title."),
    ("Mail", "SendMail", "Send an email message to a person."),
    ("Clock", "SetAlarm", "Set an alarm for a time of day."),
]


def _registry() -> ToolRegistry:
    def function(x: str) -> str:
        return x

    registry = ToolRegistry()
    for plugin, name, description in TOOLS:
        registry.add_function(function, plugin, name=name, description=description)
    return registry


def test_one_translation_per_goal_with_the_goal_last() -> None:
    llm = ScriptedLLM(["Who wrote the book Glass Harbour?"])
    translate = QueryTranslator(llm)
    assert translate("Wer hat Glass Harbour geschrieben?") == "Who wrote the book Glass Harbour?"
    assert translate("Wer hat Glass Harbour geschrieben?") == "Who wrote the book Glass Harbour?"
    assert len(llm.requests) == 1  # asked once
    request = llm.requests[0]
    assert request.temperature == 0.0 and request.stop == ("\n",)
    prompt = request.prompt
    assert prompt.rindex("Wer hat Glass Harbour geschrieben?") > max(
        prompt.index(english) for _, english in EXAMPLES)


def test_a_cut_translation_is_no_query() -> None:
    llm = ScriptedLLM(["word " * 100])
    assert QueryTranslator(llm)("一个很长的目标") == ""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ToolIndex:
    return ToolIndex(tmp_path_factory.mktemp("index"))


def test_the_filter_searches_the_translation_too(index: ToolIndex) -> None:
    """A goal the embedding model cannot read (letters replaced) offers the function its
    translation names; without the translation, or with `translate` off, it does not."""
    goal = "Qxv zrtbk Glass Harbour?"  # no word of any language
    asked: list[str] = []

    def translate(text: str) -> str:
        asked.append(text)
        return "Who wrote the book Glass Harbour?"

    options = FilterOptions(max_relevant_functions=1)
    with_it = select_specs(goal, _registry(), options, index, translate)
    assert [s.qualified_name for s in with_it] == ["Books.GetAuthor"] and asked == [goal]
    off = FilterOptions(max_relevant_functions=1, translate=False)
    assert [s.qualified_name for s in select_specs(goal, _registry(), off, index, translate)] \
        != ["Books.GetAuthor"]
    assert asked == [goal]  # not asked when off
    few = FilterOptions(max_relevant_functions=len(TOOLS))  # nothing to rank: not asked
    assert len(select_specs(goal, _registry(), few, index, translate)) == len(TOOLS)
    assert asked == [goal]


def _functions(plan: object) -> set[str]:
    """Every function a reference plan calls, at any depth."""
    if isinstance(plan, dict):
        own = {str(plan["function"])} if "function" in plan else set()
        return own.union(*(_functions(v) for v in plan.values()))
    if isinstance(plan, list):
        return set().union(*(_functions(v) for v in plan))
    return set()


def test_the_default_model_translates_goals_the_embedder_cannot_read(small_llm,
                                                                     index: ToolIndex) -> None:
    """Real model, real MiniLM: suite goals in German, Chinese and Spanish whose reference
    plan needs a function the English embedding model ranks out of the offer; with the
    model's translation every function of the plan is offered."""
    from localagent.bench.runner import filter_for
    from localagent.bench.suite import load_suite
    from localagent.bench.tools import build_registry

    suite = load_suite(Path(__file__).parent.parent / "benchmarks/suites/multilingual.yaml")
    tasks = {t.id: t for t in suite.tasks}
    translate = QueryTranslator(small_llm)
    for task_id in ("lookup-author-glass-harbour@de", "lookup-author-glass-harbour@zh",
                    "chain-manager-of-condor-driver@es"):
        task = tasks[task_id]
        _, options = filter_for(task, "auto")
        assert options is not None
        registry = build_registry(task, None)
        needed = _functions(task.solution)
        alone = {s.qualified_name for s in select_specs(task.goal, registry, options, index)}
        assert not needed <= alone, task_id  # the embedder alone misses one
        translated = {s.qualified_name for s in select_specs(
            task.goal, registry, options, index, translate)}
        assert needed <= translated, (task_id, translate(task.goal))


@pytest.mark.parametrize(("goal", "english", "shown"), [
    ("Wie hoch ist die Rechnung der Firma D?", "What is the invoice of company D?", True),
    ("What is the invoice of company D?", "What is the invoice of company D?", False),
])
def test_the_plan_prompt_shows_the_translation_only_when_it_differs(
        index: ToolIndex, goal: str, english: str, shown: bool) -> None:
    import json

    from localagent.agent import Agent

    plan = json.dumps({"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}})
    llm = ScriptedLLM([english, plan])
    agent = Agent(llm, examples=True, index=index, techniques="plain",
                  filter=FilterOptions(max_relevant_functions=4))
    result = agent.run(goal, planner="tree")
    assert result.answer == 6700
    prompt = llm.requests[1].prompt
    assert f"Goal: {goal}\n" in prompt
    assert (f"In English: {english}" in prompt) is shown
