"""The sequential planner (Semantic Kernel's BasicPlanner): a list of steps run in order.

Each step's output is piped into the next step's `input`. So that the model can leave the
pipe implicit, the grammar and the parser see the tools with `input` made optional (the
executor fills it); everything else about a function's arguments stays enforced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from localagent.grammars import parse_sequential, sequential_plan
from localagent.llm.base import LLM
from localagent.plan import INPUT, SequentialPlan, plan_from_dict
from localagent.planners.base import GenerationLog, PlannerSettings, generate_checked
from localagent.planners.prompts import sequential_prompt
from localagent.tools.spec import ToolSpec

MAX_STEPS = 6


def piped(tool: ToolSpec) -> ToolSpec:
    """`tool` with its `input` argument optional: the pipe provides it."""
    required = tool.parameters.get("required", [])
    if INPUT not in required:
        return tool
    params = {**tool.parameters, "required": [r for r in required if r != INPUT]}
    return replace(tool, parameters=params)


@dataclass(frozen=True)
class PlannedSequence:
    plan: SequentialPlan
    log: GenerationLog


class SequentialPlanner:
    """Goal -> `SequentialPlan` (at most MAX_STEPS steps, checked, never truncated)."""

    kind = "sequential"

    def __init__(self, llm: LLM, tools: Sequence[ToolSpec],
                 settings: PlannerSettings | None = None) -> None:
        self.llm, self.settings = llm, settings or PlannerSettings()
        self.tools = list(tools)
        self._piped = [piped(t) for t in self.tools]

    def constraint(self):  # -> Constraint
        return sequential_plan(self._piped, max_steps=MAX_STEPS)

    def plan(self, goal: str, log: GenerationLog | None = None) -> PlannedSequence:
        log = log if log is not None else GenerationLog()
        parsed = generate_checked(
            self.llm, sequential_prompt(goal, self.tools),
            lambda text: parse_sequential(text, self._piped, max_steps=MAX_STEPS),
            self.settings, log, constraint=self.constraint())
        return PlannedSequence(plan=plan_from_dict(parsed.plan), log=log)
