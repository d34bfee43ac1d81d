"""The `named` and `pipe` techniques of the sequential planner: which functions a prose goal
names (named.py), the recipe grammar (every named function once, in the goal's order; the
pipe feeds each later step), and a scripted plan run end to end through the real executor
and the WriterPlugin prompt functions."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from localagent.agent import Agent
from localagent.bench.scenarios import scenarios
from localagent.errors import ConstraintError
from localagent.grammars import sequential_plan
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import PlannerSettings
from localagent.planners.named import asked_functions, goal_phrases
from localagent.planners.sequential import SequentialPlanner, piped
from localagent.planners.techniques import ENGLISH_ONLY, Techniques, default_techniques

POEMS = next(s for s in scenarios() if s.name == "poems")
GOAL = POEMS.goal  # "Write a few short poems for Valentine's day in Shakespeare's style, ..."
POEM, BARD, FRENCH, UPPER = ("WriterPlugin.ShortPoem", "WriterPlugin.Shakespeare",
                             "WriterPlugin.Translate", "TextPlugin.uppercase")


@pytest.fixture(scope="module")
def tools():
    return POEMS.registry(ScriptedLLM()).specs()


def names(tools) -> list[str]:
    return [t.qualified_name for t in tools]


def step(function: str, **args: object) -> dict:
    return {"function": function, "args": args}


def plan_text(*steps: dict, start: str = "Valentine's day") -> str:
    return json.dumps({"input": start, "subtasks": list(steps)}, separators=(", ", ": "))


# --- which functions a goal names -----------------------------------------------------

def test_a_prose_goal_names_its_functions_in_its_own_order(tools) -> None:
    asked = asked_functions(GOAL, tools)
    assert asked is not None
    # Translate is asked for by a value its `language` takes ("French"), not by name
    assert names(asked.tools) == [POEM, BARD, FRENCH, UPPER]
    assert asked.required == [POEM, BARD, UPPER]
    assert "Valentine's day" in asked.phrases and "in French" in asked.phrases


def test_goals_that_ask_for_a_value_or_name_one_function_keep_every_tool(tools) -> None:
    assert asked_functions("How many poems are uppercase in Shakespeare?", tools) is None
    assert asked_functions("Write a short poem about the sea", tools) is None  # one function
    # words inside quotes are the text to work on, not instructions
    assert asked_functions("Write 'short poem in uppercase' in French", tools) is None
    acronym = asked_functions("Invent an acronym for 'robots' and write it in uppercase.", tools)
    assert acronym is not None
    assert names(acronym.tools) == ["WriterPlugin.Acronym", UPPER]


def test_goal_phrases_keep_quotes_whole_and_clauses_apart() -> None:
    phrases = goal_phrases("Summarize this, then lowercase it: 'Bees pollinate. Without bees, no'")
    assert phrases[0] == "Bees pollinate. Without bees, no"
    assert "Summarize this" in phrases and "then lowercase it" in phrases
    assert not any("this then" in p for p in phrases)  # no phrase runs across a comma


# --- the grammars ---------------------------------------------------------------------

def test_pipe_leaves_input_to_the_pipe_after_the_first_step(tools) -> None:
    shown = [piped(t) for t in tools]
    on = sequential_plan(shown, refs="backward", pipe=True)
    off = sequential_plan(shown, refs="backward")
    good = plan_text(step(POEM, input="love"), step(UPPER))
    retyped = plan_text(step(POEM, input="love"), step(UPPER, input="love"))
    ref = plan_text(step(POEM, input="love"), step(UPPER, input="$1"))
    assert matches(on, good) and matches(off, good)
    assert matches(off, retyped) and not matches(on, retyped)
    assert matches(off, ref) and not matches(on, ref)


def test_the_recipe_grammar_calls_each_named_function_once_in_the_goals_order(tools) -> None:
    planner = SequentialPlanner(ScriptedLLM(), tools, PlannerSettings(
        techniques=Techniques.parse("mentions+answer+backrefs+named")))
    grammar = planner.constraint(planner.tools_for(GOAL), GOAL)
    french = step(FRENCH, language="French")
    first = step(POEM, input="Valentine's day")
    assert matches(grammar, plan_text(first, step(BARD), french, step(UPPER)))
    assert matches(grammar, plan_text(first, step(BARD), step(UPPER)))  # Translate optional
    assert matches(grammar, plan_text(first, french, step(BARD), step(UPPER)))
    for wrong in (plan_text(step(BARD, input="Valentine's day"), step(POEM), step(UPPER)),
                  plan_text(first, step(UPPER)),  # Shakespeare never called
                  plan_text(first, step(BARD), step(BARD), step(UPPER)),  # twice
                  plan_text(first, step(BARD), step(UPPER), french),  # not the final form
                  plan_text(first, step("WriterPlugin.Acronym"), step(BARD), step(UPPER)),
                  plan_text(first, step(BARD), step(UPPER), start="our new boat")):
        assert not matches(grammar, wrong), wrong


def test_the_recipe_needs_room_for_every_named_function(tools) -> None:
    shown = [piped(t) for t in tools]
    with pytest.raises(ConstraintError, match="in order"):
        sequential_plan(shown, max_steps=2, must=[POEM, BARD, UPPER])
    with pytest.raises(ConstraintError, match="not offered"):
        sequential_plan(shown, must=["Nope.Missing"])


def test_named_is_english_only_and_in_no_default() -> None:
    """`named` reads English phrasing ("in uppercase", "short poems"): opt-in only."""
    assert "named" in ENGLISH_ONLY
    for planner in ("tree", "sequential", "react", "tools"):
        assert not default_techniques(planner).named, planner
    assert Techniques.parse("named").named


def test_a_recipe_plan_runs_through_the_prompt_functions(tools) -> None:
    """The sequential planner with `named` turned on (English-only, opt-in: the sequential
    default with `named` added) and a scripted model: the plan the recipe grammar admits,
    each prompt function answered in turn, the uppercase of the last one."""
    plan = plan_text(step(POEM, input="Valentine's day"), step(BARD),
                     step(FRENCH, language="French"), step(UPPER))
    llm = ScriptedLLM([plan, "roses are red", "roses art red", "les roses sont rouges"])
    agent = Agent(llm, registry=POEMS.registry(llm),
                  techniques=replace(default_techniques("sequential"), named=True))
    result = agent.run(GOAL, planner="sequential")
    assert result.answer == "LES ROSES SONT ROUGES", result.to_dict()
    assert [s["function"] for s in result.plan["subtasks"]] == [POEM, BARD, FRENCH, UPPER]
    assert POEMS.judge(result) is None
    assert "WriterPlugin.Acronym" not in llm.requests[0].prompt  # only the named functions
