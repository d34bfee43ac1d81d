"""Shared by the fast technique tests: the generalisation suite's tools, and whether a
tree planner's grammar for a goal admits a plan (no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localagent.bench.suite import load_suite
from localagent.bench.tools import build_registry
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import PlannerSettings
from localagent.planners.techniques import Techniques
from localagent.planners.tree import TreePlanner

SUITE = load_suite(Path(__file__).resolve().parents[1] / "benchmarks" / "suites"
                   / "generalisation.yaml")
TOOLS = build_registry(SUITE.tasks[0]).specs()  # every task offers the same 28 functions


def call(function: str, **args: Any) -> dict:
    """A raw tree-plan call, as the model writes it."""
    return {"function": function, "args": args}


def admits(spec: str, goal: str, plan: dict) -> bool:
    """Whether the tree grammar for `goal` under techniques `spec` admits `plan`."""
    planner = TreePlanner(ScriptedLLM([]), TOOLS,
                          PlannerSettings(techniques=Techniques.parse(spec)))
    grammar = planner.constraint(planner.tools_for(goal), goal)
    return matches(grammar, json.dumps(plan, separators=(", ", ": ")))


def admits_steps(spec: str, goal: str, steps: list[dict], start: str) -> bool:
    """Whether the sequential grammar for `goal` under `spec` admits the plan of `steps`
    (raw `{"function", "args"}` steps) starting from the input `start`."""
    from localagent.planners.sequential import SequentialPlanner

    planner = SequentialPlanner(ScriptedLLM([]), TOOLS,
                                PlannerSettings(techniques=Techniques.parse(spec)))
    grammar = planner.constraint(planner.tools_for(goal), goal)
    return matches(grammar, json.dumps({"input": start, "subtasks": steps},
                                       separators=(", ", ": ")))
