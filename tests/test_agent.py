"""Agent wiring with a scripted model: usage metering, errors as results, bad input."""

from __future__ import annotations

import json

import pytest

from localagent.agent import Agent
from localagent.errors import UsageError
from localagent.llm import ScriptedLLM
from localagent.retrieval import FilterOptions

PLAN = {"function": "DemoPlugin.Diff", "args": {
    "value1": {"function": "DemoPlugin.GetInvoice", "args": {"company": "C"}},
    "value2": 100}}


def test_tree_run_answer_plan_steps_usage():
    llm = ScriptedLLM([json.dumps({"reasoning": "r", "plan": PLAN})])
    result = Agent(llm, examples=True).run("C minus 100", planner="tree")
    assert result.ok and result.answer == 19900
    assert result.plan["root"]["function"] == "DemoPlugin.Diff"
    assert [s["kind"] for s in result.steps].count("call_finished") == 2
    assert result.usage.calls == 1 and result.usage.prompt_tokens > 0
    data = result.to_dict()
    assert {"answer", "planner", "model", "plan", "steps", "usage", "seconds"} <= set(data)
    from localagent.bench.scenarios import calls_of  # the judges' view of the run

    assert [(c["function"], c["result"]) for c in calls_of(result)] == [
        ("DemoPlugin.GetInvoice", 20000), ("DemoPlugin.Diff", 19900)]


def test_planning_failure_is_a_result_not_an_exception():
    result = Agent(ScriptedLLM(["nope"] * 3)).run("g", planner="tree")
    assert not result.ok and "3 attempts" in result.error and result.answer is None


def test_prompt_functions_share_the_metered_model(tmp_path):
    plan = {"input": "cats", "subtasks": [{"function": "WriterPlugin.ShortPoem", "args": {}},
                                          {"function": "TextPlugin.uppercase", "args": {}}]}
    llm = ScriptedLLM([json.dumps(plan), "a poem about cats"])
    from localagent.samples import PROMPT_PLUGINS_DIR

    result = Agent(llm, [PROMPT_PLUGINS_DIR]).run("poem, uppercase", planner="sequential")
    assert result.answer == "A POEM ABOUT CATS"
    assert result.usage.calls == 2  # the plan and the prompt function


def test_filter_exclusions_shrink_the_tools():
    llm = ScriptedLLM([json.dumps({"reasoning": "r", "plan": PLAN})])
    agent = Agent(llm, filter=FilterOptions(excluded_plugins=("TimePlugin", "TextPlugin")),
                  examples=True)
    result = agent.run("C minus 100")
    assert result.ok and not any(t.startswith(("TimePlugin", "TextPlugin")) for t in result.tools)
    assert "TimePlugin" not in llm.requests[0].prompt


@pytest.mark.parametrize("goal,planner", [("", "tree"), ("g", "nope")])
def test_bad_input_raises(goal, planner):
    with pytest.raises(UsageError):
        Agent(ScriptedLLM()).run(goal, planner=planner)


def test_plan_only_planners():
    with pytest.raises(UsageError):
        Agent(ScriptedLLM()).plan("g", planner="react")


def test_poems_judge_wants_written_poems_piped_into_the_uppercase():
    """The judge of the sequential scenario (shared with scripts/bench_scenarios.py)."""
    from types import SimpleNamespace

    from localagent.bench.scenarios import judge_poems

    def outcome(steps, answer="POÈMES"):
        return SimpleNamespace(plan={"subtasks": steps}, answer=answer, error=None)

    poem = {"function": "WriterPlugin.ShortPoem", "args": {}}
    upper = {"function": "TextPlugin.uppercase", "args": {}}
    assert judge_poems(outcome([poem, upper])) is None
    assert "writes the poems" in judge_poems(outcome([upper]))
    literal = {"function": "TextPlugin.uppercase", "args": {"input": "Aurteur de la vie"}}
    assert "given text" in judge_poems(outcome([poem, literal]))  # seen on the model
    assert "not uppercase" in judge_poems(outcome([poem, upper], answer="Poèmes"))
