"""The tree planner: one nested call, `subtract(GetPrice(A), GetPrice(B))`, evaluated bottom-up.

Prompt: the manual, solved plans over other functions (fixed, or the most similar ones
with the `similar` technique) and, with the `reasoning` technique, a short free-text list
of steps before the plan; DESIGN.md section 4 measured that listing the steps first
roughly doubles the goals a 0.5B model solves. The grammar ties each function to its own
arguments and lets a call stand only where its return type fits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from localagent.constraint import Constraint
from localagent.errors import DeclinedError
from localagent.grammar.expression import expression_plan
from localagent.grammars import Bounds, ParsedPlan, json_object_lost, parse_tree, tree_plan
from localagent.llm.base import LLM, GiveUp, Message
from localagent.plan import TreePlan, plan_from_dict
from localagent.plan_expression import parse_expression
from localagent.planners.base import (
    NO_PLAN_MESSAGE,
    GenerationLog,
    PlannerSettings,
    first_buildable,
    generate_checked,
    replan_messages,
)
from localagent.planners.coverage import listed_groups, stated_enum_values
from localagent.planners.decline import plan_declined
from localagent.planners.examples import choose_examples
from localagent.planners.layout import plan_manual
from localagent.planners.mentions import anchor_to_goal, stated_numbers
from localagent.planners.nesting import arithmetic
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
    text: str = ""  # the model's output, for re-planning


class TreePlanner:
    """Goal -> `TreePlan` (checked against the tools' schemas; never truncated)."""

    kind = "tree"

    def __init__(self, llm: LLM, tools: Sequence[ToolSpec],
                 settings: PlannerSettings | None = None, *, depth: int = 4) -> None:
        self.llm, self.tools = llm, list(tools)
        self.settings, self.techniques = (settings or PlannerSettings()).for_planner(self.kind)
        self.depth = depth

    def relaxed(self) -> TreePlanner | None:
        """This planner without `values` (None when it is off): its plan for a goal whose
        stated values are alternatives ("convert to EUR; otherwise to GBP") must force in
        values no branch-free plan needs. `plan_runner` plans with it once when the plan
        made under `values` failed to execute; the prompt is the same, so it is cached."""
        if not self.techniques.values:
            return None
        settings = replace(self.settings, techniques=replace(self.techniques, values=False))
        return TreePlanner(self.llm, self.tools, settings, depth=self.depth)

    @property
    def reasoning(self) -> bool:
        return self.techniques.shows_reasoning

    def tools_for(self, goal: str) -> list[ToolSpec]:
        """The functions as this goal's plan sees them (narrowed by `mentions` to the
        values the goal, or a conversation's earlier turns, state)."""
        if self.techniques.mentions:
            return anchor_to_goal(self.tools, self.settings.framed(goal))
        return self.tools

    def constraint(self, tools: Sequence[ToolSpec] | None = None, goal: str = "") -> Constraint:
        """The plan grammar; with `values` and a goal, one that must pass every enum value
        the goal writes to a call, values listed with marks only ("C, F") combined in one
        call before meeting the others (grammar/covering.py); with `shallow`, arithmetic
        only in the outer two levels (nesting.py); with `numbers` (and `mentions`), one
        passing every number the goal states to a call. A restriction that no plan over
        these tools can meet is dropped (`numbers` first, then `values`). With
        `expression`, the call-expression grammar (grammar/expression.py), to which none
        of these apply. Marked for fast-forward (`Constraint.fast_forward`): a plan is
        mostly forced JSON.
        """
        return replace(self._grammar(tools, goal), fast_forward=True)

    def _grammar(self, tools: Sequence[ToolSpec] | None, goal: str) -> Constraint:
        shown, t = (self.tools if tools is None else tools), self.techniques
        if t.expression:
            return expression_plan(shown, depth=self.depth, bounds=BOUNDS)
        cover = stated_enum_values(goal, shown) if t.values and goal else []
        groups = listed_groups(goal, cover) if t.values else []
        options = {"depth": self.depth, "bounds": BOUNDS, "reasoning_steps": t.steps,
                   "reasoning_chars": REASONING_CHARS if self.reasoning else 0,
                   "groups": groups,
                   "shallow": arithmetic(shown) if t.shallow else (), "decline": t.decline}
        numbers = stated_numbers(goal) if t.numbers and t.mentions and goal else []
        return first_buildable(
            lambda **kw: tree_plan(shown, **kw),
            ({"cover": cover, "numbers": numbers}, {"cover": cover, "numbers": []}), **options)

    def messages(self, goal: str, tools: Sequence[ToolSpec] | None = None) -> list[Message]:
        """The prompt; with `tools` narrowed for the goal, the manual lists the arguments'
        own values and the goal's follow it (`layout.plan_manual`: one manual for every
        goal over these tools, so its KV cache is reused)."""
        examples = choose_examples(goal, self.techniques)
        shown, note = (self.tools, "") if tools is None else plan_manual(
            self.tools, tools, self.techniques.compact)
        return tree_prompt(self.settings.framed(goal), shown, examples, note=note,
                           reasoning=self.reasoning, compact=self.techniques.compact,
                           decline=self.techniques.decline,
                           expression=self.techniques.expression,
                           english=self.settings.english(goal) if self.settings.english else "")

    def parse(self, text: str, tools: Sequence[ToolSpec]) -> ParsedPlan:
        """The model's output as a checked plan over `tools` (raises when rejected)."""
        if self.techniques.expression:
            return parse_tree(json.dumps(parse_expression(text)), tools, depth=self.depth)
        return parse_tree(text, tools, depth=self.depth, decline=self.techniques.decline)

    def plan(self, goal: str, log: GenerationLog | None = None, *,
             failed: PlannedTree | None = None, error: str = "",
             settings: PlannerSettings | None = None,
             watch: GiveUp | None = None) -> PlannedTree:
        """A checked plan; with `failed` and `error`, a corrected one (re-planning).
        `watch` sees the plan text as it is written (`EarlyCalls.watch`)."""
        log = log if log is not None else GenerationLog()
        if failed is None and plan_declined(self, goal, settings, log):
            raise DeclinedError(NO_PLAN_MESSAGE)
        tools = self.tools_for(goal)
        messages = self.messages(goal, tools)
        if failed is not None:
            messages = replan_messages(messages, failed.text, error)
        parsed = generate_checked(
            self.llm, messages, lambda text: self.parse(text, tools),
            settings or self.settings, log, constraint=self.constraint(tools, goal),
            give_up=None if self.techniques.expression else json_object_lost,
            watch=None if self.techniques.expression else watch)
        if parsed.declined:
            raise DeclinedError(NO_PLAN_MESSAGE)
        return PlannedTree(plan=plan_from_dict(parsed.plan), reasoning=parsed.reasoning,
                           log=log, text=log.raw[-1])
