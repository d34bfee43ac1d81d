"""The tree planner: one nested call, `Diff(Total(C, F), Total(A, E))`, evaluated bottom-up.

Prompt: the manual, three nested examples over invented tools, and a short free-text
"reasoning" (the steps) before the plan; DESIGN.md section 4 measured that listing the
steps first roughly doubles the goals a 0.5B model solves. The grammar ties each function
to its own arguments and lets a call stand only where its return type fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from localagent.grammars import Bounds, parse_tree, tree_plan
from localagent.llm.base import LLM
from localagent.plan import TreePlan, plan_from_dict
from localagent.planners.base import GenerationLog, PlannerSettings, generate_checked
from localagent.planners.prompts import tree_prompt
from localagent.tools.spec import ToolSpec

REASONING_CHARS = 320
# The grammar caps every JSON string at Bounds.max_string (120 by default), the reasoning
# too: the steps of a 5-call plan need more, or the model is cut off before the plan.
BOUNDS = Bounds(max_string=REASONING_CHARS)


@dataclass(frozen=True)
class PlannedTree:
    plan: TreePlan
    reasoning: str | None
    log: GenerationLog


class TreePlanner:
    """Goal -> `TreePlan` (checked against the tools' schemas; never truncated)."""

    kind = "tree"

    def __init__(self, llm: LLM, tools: Sequence[ToolSpec],
                 settings: PlannerSettings | None = None, *, depth: int = 4) -> None:
        self.llm, self.tools, self.settings, self.depth = llm, list(tools), settings or PlannerSettings(), depth

    def constraint(self):  # -> Constraint
        return tree_plan(self.tools, depth=self.depth, reasoning_chars=REASONING_CHARS,
                         bounds=BOUNDS)

    def plan(self, goal: str, log: GenerationLog | None = None) -> PlannedTree:
        log = log if log is not None else GenerationLog()
        parsed = generate_checked(
            self.llm, tree_prompt(goal, self.tools),
            lambda text: parse_tree(text, self.tools, depth=self.depth),
            self.settings, log, constraint=self.constraint())
        return PlannedTree(plan=plan_from_dict(parsed.plan), reasoning=parsed.reasoning,
                           log=log)
