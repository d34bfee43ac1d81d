"""Acceptance on the real default model (greedy, seed 0): the four documented scenarios.

Each test asserts the real outcome (the number, the calls made, the uppercase text), with
the judges shared with `scripts/bench_scenarios.py`, which also measures success rates over
several seeds.
"""

from __future__ import annotations

import pytest

from localagent.agent import Agent
from localagent.planners.base import PlannerSettings
from localagent.planners.scenarios import Scenario, scenarios

BY_NAME = {s.name: s for s in scenarios()}


def run(llm, scenario: Scenario, planner: str, **kwargs):
    agent = Agent(llm, registry=scenario.registry(llm),
                  settings=PlannerSettings(temperature=0.0, seed=0))
    return agent.run(scenario.goal, planner=planner, **kwargs)


def test_invoice_tree_nests_diff_over_two_totals(default_llm):
    """Greedy passes with the default `together` (5 seeds: 2/5, docs/BENCHMARKS.md)."""
    result = run(default_llm, BY_NAME["invoice"], "tree")
    assert BY_NAME["invoice"].judge(result) is None, result.to_dict()
    assert result.answer == 21100


def test_furina_react_two_tool_steps(default_llm):
    result = run(default_llm, BY_NAME["furina"], "react", max_iterations=4)
    assert BY_NAME["furina"].judge(result) is None, result.to_dict()
    assert result.usage.prompt_tokens_reused > 0  # each step reused the transcript so far


@pytest.mark.parametrize("name", ["bet-rain", "bet-dry"])
def test_bet_tool_calling_converts_only_when_it_rained(default_llm, name):
    """With the default `check`: 5/5 seeds each (docs/BENCHMARKS.md, stop 14)."""
    result = run(default_llm, BY_NAME[name], "tools", max_iterations=4)
    assert BY_NAME[name].judge(result) is None, result.to_dict()


def test_poems_sequential_ends_uppercase(default_llm):
    """With the default `named` the goal's own steps, in its order (docs/BENCHMARKS.md)."""
    result = run(default_llm, BY_NAME["poems"], "sequential")
    assert BY_NAME["poems"].judge(result) is None, result.to_dict()


def test_invoice_tree_with_filtering_among_200_distractors(default_llm, tmp_path):
    """Issue 6: the filter finds the invoice functions among 200 unrelated catalog tools
    (real MiniLM, real Chroma on disk) and the tree planner, offered only the kept
    functions, still computes the invoice difference (seeds 0-2: 3/3, docs/BENCHMARKS.md)."""
    import random

    from localagent.bench.tools import distractor_tool
    from localagent.retrieval import FilterOptions, ToolIndex
    from localagent.retrieval.dataset import load_tools

    scenario = BY_NAME["invoice"]
    registry = scenario.registry(default_llm)
    # The 200 distractors of tests/test_retrieval.py: no homonym of GetInvoice, Total or
    # Diff (a second `GetInvoice` is not a distractor, no filter can tell the two apart).
    pool = [s for s in load_tools() if s.name not in {"GetInvoice", "Total", "Diff"}]
    for spec in random.Random(4).sample(pool, 200):
        registry.add_tool(distractor_tool(spec))
    assert len(registry.specs()) == 203
    agent = Agent(default_llm, registry=registry, index=ToolIndex(tmp_path / "index"),
                  filter=FilterOptions(max_relevant_functions=5),
                  settings=PlannerSettings(temperature=0.0, seed=0))
    result = agent.run(scenario.goal, planner="tree")
    assert len(result.tools) == 5
    assert {"DemoPlugin.GetInvoice", "DemoPlugin.Total"} <= set(result.tools), result.tools
    assert result.answer == 21100, result.to_dict()
    assert scenario.judge(result) is None, result.to_dict()  # Diff over two Totals
