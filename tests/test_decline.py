"""The `decline` technique in every planner: an explicit refusal that the grammar admits.

Tree and sequential plans may be the refusal call `{"function": "none", "args": {}}`; the
first ReAct step may be the Final Answer `NO_TOOL_ANSWER`. Either ends the run with no
answer, a `declined: ...` reason and no tool called. Without the technique the grammar
admits neither, and the parser reads `none` as the unknown function it is.
"""

from __future__ import annotations

import json

import pytest

from localagent import grammars as G
from localagent.agent import Agent
from localagent.errors import DeclinedError, PlanValidationError
from localagent.grammar.samples import demo_tools
from localagent.llm.constrained import matches
from localagent.llm.scripted import ScriptedLLM
from localagent.planners.base import NO_PLAN_MESSAGE, PlannerSettings
from localagent.planners.prompts import NO_TOOL_ANSWER
from localagent.planners.techniques import TechniqueChanges, Techniques
from localagent.planners.tree import TreePlanner
from localagent.tools.registry import default_registry

TOOLS = demo_tools()
NONE = {"function": "none", "args": {}}
INVOICE = {"function": "DemoPlugin.GetInvoice", "args": {"company": "Acme"}}


def j(value: object) -> str:
    return json.dumps(value)


def test_tree_grammar_admits_the_refusal_only_with_decline() -> None:
    plain, declining = G.tree_plan(TOOLS), G.tree_plan(TOOLS, decline=True)
    assert not matches(plain, j(NONE))
    assert matches(declining, j(NONE)) and matches(declining, j(INVOICE))
    # `none` is a plan of its own, never an argument or a call with arguments
    assert not matches(declining, j({"function": "none", "args": {"x": 1}}))
    assert not matches(declining, j({"function": "DemoPlugin.Total",
                                     "args": {"value1": NONE, "value2": 1}}))
    assert G.parse_tree(j(NONE), TOOLS, decline=True).declined
    with pytest.raises(PlanValidationError, match="unknown function 'none'"):
        G.parse_tree(j(NONE), TOOLS)


def test_sequential_grammar_admits_the_refusal_as_the_only_subtask() -> None:
    plain = G.sequential_plan(TOOLS, refs="backward")
    declining = G.sequential_plan(TOOLS, refs="backward", decline=True)
    refusal = {"input": "", "subtasks": [NONE]}
    assert not matches(plain, j(refusal)) and matches(declining, j(refusal))
    assert not matches(declining, j({"input": "", "subtasks": [INVOICE, NONE]}))
    assert matches(declining, j({"input": "", "subtasks": [INVOICE]}))
    assert G.parse_sequential(j(refusal), TOOLS, refs=True, decline=True).declined
    with pytest.raises(PlanValidationError):
        G.parse_sequential(j(refusal), TOOLS, refs=True)


def test_react_first_step_may_decline_with_the_one_refusal_answer() -> None:
    c = G.react_step(TOOLS, allowed_finals=[NO_TOOL_ANSWER])
    assert matches(c, f"Thought: no tool fits\nFinal Answer: {NO_TOOL_ANSWER}")
    assert not matches(c, "Thought: I know\nFinal Answer: 42")
    assert matches(c, 'Thought: look\nAction: DemoPlugin.GetInvoice\nAction Input: '
                      '{"company": "Acme"}')


@pytest.mark.parametrize("planner,output", [
    ("tree", j(NONE)),
    ("sequential", j({"input": "", "subtasks": [NONE]})),
    ("react", f"Thought: no tool fits\nFinal Answer: {NO_TOOL_ANSWER}"),
])
def test_the_refusal_the_grammar_admits_ends_the_run_declined(planner: str,
                                                               output: str) -> None:
    """The probe opens a call (the model would use a tool), then the planner's own
    constrained output is the refusal: no answer, a reason, nothing called."""
    llm = ScriptedLLM(["<tool_call>", output])
    agent = Agent(llm, examples=True, techniques="+decline")
    result = agent.run("What is the capital of France?", planner=planner)
    assert result.answer is None and not result.ok
    assert result.error is not None and result.error.startswith("declined:")
    assert result.stop_reason == result.error
    assert not any(s.get("function") for s in result.steps)  # no tool was called
    probe, planned = llm.requests
    assert probe.constraint is None and planned.constraint is not None
    assert ("none" in planned.prompt) and (NO_TOOL_ANSWER in planned.prompt
                                           or '"none"' in planned.prompt)


@pytest.mark.parametrize("planner", ["tree", "sequential", "react", "tools"])
def test_a_probe_reply_in_prose_declines_before_any_plan(planner: str) -> None:
    """The model, asked in its own tool-calling format, answers in prose: every planner
    ends declined after that one short unconstrained request."""
    llm = ScriptedLLM(["I cannot look that up."])
    result = Agent(llm, examples=True, techniques="+decline").run(
        "What is the capital of France?", planner=planner)
    assert result.answer is None and result.stop_reason.startswith("declined:")
    assert len(llm.requests) == 1 and llm.requests[0].constraint is None
    assert "<tools>" in llm.requests[0].prompt  # the offered tools, in the model's own format


def test_without_a_tool_format_only_the_grammar_can_decline() -> None:
    """A model whose chat template has no tool format is not probed (its free reply
    tells nothing); the refusal plan is still admitted."""
    llm = ScriptedLLM([j(NONE)], chat_format=None)
    result = Agent(llm, examples=True, techniques="+decline").run("What is 2 + 2?")
    assert result.stop_reason.startswith("declined:") and len(llm.requests) == 1
    assert llm.requests[0].constraint is not None


def test_the_refusal_prompt_and_grammar_are_only_there_with_decline() -> None:
    specs = default_registry(examples=True).specs()
    plain = TreePlanner(ScriptedLLM([]), specs, PlannerSettings(techniques=Techniques()))
    declining = TreePlanner(ScriptedLLM([]), specs,
                            PlannerSettings(techniques=Techniques(decline=True)))
    goal = "What is the total of the invoices of A and C?"
    assert '"none"' not in plain.messages(goal)[0]["content"]
    assert '"none"' in declining.messages(goal)[0]["content"]
    assert not matches(plain.constraint(goal=goal), j(NONE))
    assert matches(declining.constraint(goal=goal), j(NONE))


def test_plan_only_raises_declined() -> None:
    agent = Agent(ScriptedLLM(["<tool_call>", j(NONE)]), examples=True, techniques="+decline")
    with pytest.raises(DeclinedError, match=NO_PLAN_MESSAGE):
        agent.plan("What is the capital of France?")


@pytest.mark.parametrize("planner", ["tree", "sequential"])
def test_each_default_plan_grammar_with_decline_admits_the_refusal(planner: str) -> None:
    from localagent.planners.sequential import SequentialPlanner

    specs = [s for s in default_registry(examples=True).specs()
             if s.plugin in ("DemoPlugin", "MathPlugin")]
    cls = TreePlanner if planner == "tree" else SequentialPlanner
    settings = PlannerSettings(techniques=TechniqueChanges.parse("+decline"))
    p = cls(ScriptedLLM([]), specs, settings)
    goal = "What is the total of the invoices of A and C?"
    refusal = NONE if planner == "tree" else {"input": "", "subtasks": [NONE]}
    assert matches(p.constraint(p.tools_for(goal), goal), j(refusal))


def test_real_model_declines_a_goal_no_tool_answers_without_calling_anything() -> None:
    """The default model over the generalisation suite's plugins (people, books, fleet...):
    none of them knows tomorrow's weather. Measured at the probe's threshold (0.3): it
    declines 4 of the multilingual suite's 10 such goals and 2 of its 47 answerable English
    ones (docs/BENCHMARKS.md); "What is Priya's phone number?", the goal this test asked
    until the threshold moved from the greedy probe, has P(call) between 0.3 and 0.5 here
    and is no longer declined."""
    from conftest import run_cli

    plugins = [a for f in ("books", "fleet", "staff", "countries", "league", "planets")
               for a in ("--plugins", f"benchmarks/suites/plugins/{f}.py")]
    excluded = [a for f in ("Calculator", "power", "sqrt") for a in ("--exclude",
                                                                    f"MathPlugin.{f}")]
    proc = run_cli("run", "What will the weather be like in Nairobi tomorrow?", *plugins,
                   *excluded,
                   "--planner", "tree",
                   "--techniques=+decline", "--json", env={"LOCALAGENT_THREADS": "1"})
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["answer"] is None and out["stop_reason"].startswith("declined:")
    assert out["steps"] == [] and out["plan"] is None
    # the filter's goal translation and the probe: no plan was generated
    assert out["usage"]["calls"] == 2


def test_real_model_declines_calls_that_invent_the_values_the_goal_never_states(
        small_llm) -> None:
    """BFCL v4 `irrelevance_45`: "the sine of 45 degrees", offered only a polygon
    builder. The default model is sure it would call (P(call) 0.94, so the probe lets it
    through) and calls `create_polygon` with vertices it made up; fewer than half of the
    required values are stated by the goal (`stated.stated_share`), so the tools planner
    declines before anything runs. A goal that states the vertices, in Spanish, is run."""
    from localagent.planners.base import PlannerSettings
    from localagent.tools.from_schema import RecordingStub, schema_tool
    from localagent.tools.registry import ToolRegistry

    stub = RecordingStub()
    registry = ToolRegistry(small_llm)
    registry.add_tool(schema_tool({
        "name": "create_polygon", "description": "Create a polygon shape with given vertices.",
        "parameters": {"type": "object", "required": ["vertices", "is_closed"], "properties": {
            "vertices": {"type": "array", "items": {"type": "number"},
                         "description": "List of vertices (x, y) to define the shape."},
            "is_closed": {"type": "boolean", "description": "Whether to close the shape."},
            "stroke_width": {"type": "integer", "description": "Stroke width. Default: 5"}}}},
        stub))
    agent = Agent(small_llm, registry=registry, settings=PlannerSettings(seed=0))
    result = agent.run("Calculate the sine of 45 degree.", planner="tools")
    assert result.stop_reason == ("declined: the goal states too few of the values its first "
                                  "calls need"), result.to_dict()
    assert result.answer is None and stub.calls == []
    result = agent.run("Crea un polígono cerrado con los vértices 0, 0, 4, 0, 4, 3.",
                       planner="tools")
    assert not result.stop_reason.startswith("declined"), result.to_dict()
    assert stub.calls and stub.calls[0][0] == "functions.create_polygon", stub.calls
