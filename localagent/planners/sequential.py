"""The sequential planner (Semantic Kernel's BasicPlanner): a list of steps run in order.

Each step's output is piped into the next step's `input`. So that the model can leave the
pipe implicit, the grammar and the parser see the tools with `input` made optional (the
executor fills it); everything else about a function's arguments stays enforced. An
argument may also be `"$k"`, the output of step k (ReWOO's `#Ek`), so that one step can
combine two earlier results; with the `backrefs` technique the grammar admits only
references to earlier steps, otherwise a forward reference is caught by the parser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from localagent.constraint import Constraint
from localagent.errors import DeclinedError, PlanValidationError
from localagent.grammars import (
    Bounds,
    ParsedPlan,
    json_object_lost,
    parse_sequential,
    sequential_plan,
)
from localagent.llm.base import LLM, GiveUp, Message
from localagent.plan import INPUT, SequentialPlan, plan_from_dict
from localagent.planners.base import (
    NO_PLAN_MESSAGE,
    GenerationLog,
    PlannerSettings,
    generate_checked,
    replan_messages,
)
from localagent.planners.decline import plan_declined
from localagent.planners.examples import choose_examples
from localagent.planners.layout import plan_manual
from localagent.planners.mentions import anchor_to_goal
from localagent.planners.parts import with_part
from localagent.planners.prompts import sequential_prompt
from localagent.tools.spec import ToolSpec

MAX_STEPS = 6
REASONING_CHARS = 320
BOUNDS = Bounds(max_string=REASONING_CHARS)


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
    text: str = ""  # the model's output, for re-planning


class SequentialPlanner:
    """Goal -> `SequentialPlan` (at most MAX_STEPS steps, checked, never truncated)."""

    kind = "sequential"

    def __init__(self, llm: LLM, tools: Sequence[ToolSpec],
                 settings: PlannerSettings | None = None) -> None:
        self.llm = llm
        self.settings, self.techniques = (settings or PlannerSettings()).for_planner(self.kind)
        self.tools = list(tools)
        self._piped = [piped(t) for t in self.tools]

    def tools_for(self, goal: str) -> list[ToolSpec]:
        """The functions (input piped) as this goal's plan sees them (`mentions`: the
        values the goal, or a conversation's earlier turns, state)."""
        if self.techniques.mentions:
            return anchor_to_goal(self._piped, self.settings.framed(goal))
        return self._piped

    def constraint(self, tools: Sequence[ToolSpec] | None = None, goal: str = "") -> Constraint:
        """The plan grammar over `tools` (default: every function, input piped); `goal`
        is unused: the same grammar for every goal over these tools."""
        t = self.techniques
        shown = self._piped if tools is None else tools
        options: dict = {"max_steps": MAX_STEPS, "bounds": BOUNDS, "pipe": t.pipe,
                         "refs": "backward" if t.backrefs else "any", "reasoning_steps": t.steps,
                         "reasoning_chars": REASONING_CHARS if t.shows_reasoning else 0,
                         "ordered": t.ordered, "distinct": t.distinct, "typed": t.typed,
                         "decline": t.decline}
        grammar = sequential_plan(shown, **options)
        return replace(grammar, fast_forward=True)  # a plan is mostly forced JSON

    def messages(self, goal: str, tools: Sequence[ToolSpec] | None = None) -> list[Message]:
        """The prompt; with `tools` narrowed for the goal, the manual lists the arguments'
        own values and the goal's follow it (`layout.plan_manual`, as in the tree planner:
        one manual for every goal over these tools)."""
        t = self.techniques
        shown, note = (self.tools, "") if tools is None else plan_manual(
            self._piped, tools, t.compact)
        return sequential_prompt(self.settings.framed(goal), shown, choose_examples(goal, t),
                                 note=note,
                                 reasoning=t.shows_reasoning, compact=t.compact,
                                 decline=t.decline,
                                 english=self.settings.english(goal) if self.settings.english
                                 else "")

    def parse(self, text: str, tools: Sequence[ToolSpec]) -> ParsedPlan:
        """The model's output as a checked plan over `tools` (raises when rejected)."""
        return parse_sequential(text, tools, max_steps=MAX_STEPS, refs=True,
                                decline=self.techniques.decline)

    def plan(self, goal: str, log: GenerationLog | None = None, *,
             failed: PlannedSequence | None = None, error: str = "",
             settings: PlannerSettings | None = None,
             watch: GiveUp | None = None) -> PlannedSequence:
        """A checked plan; with `failed` and `error`, a corrected one (re-planning).
        `watch` sees the plan text as it is written (`EarlyCalls.watch`)."""
        log = log if log is not None else GenerationLog()
        if failed is None and plan_declined(self, goal, settings, log):
            raise DeclinedError(NO_PLAN_MESSAGE)
        tools = self.tools_for(goal)
        messages = self.messages(goal, tools if self.techniques.mentions else None)
        if failed is not None:
            messages = replan_messages(messages, failed.text, error)
        parsed = generate_checked(
            self.llm, messages,
            lambda text: self.parse(text, tools),
            settings or self.settings, log, constraint=self.constraint(tools, goal),
            give_up=json_object_lost, watch=watch)
        if parsed.declined:
            raise DeclinedError(NO_PLAN_MESSAGE)
        text = log.raw[-1]
        parsed, text = self._take_part(messages, parsed, text, tools,
                                       settings or self.settings, log)
        return PlannedSequence(plan=plan_from_dict(parsed.plan), log=log, text=text)

    def _take_part(self, messages: list[Message], parsed: ParsedPlan, text: str,
                   tools: Sequence[ToolSpec], settings: PlannerSettings,
                   log: GenerationLog) -> tuple[ParsedPlan, str]:
        """The plan and its text, the last step taking the part of its object result the
        model chooses (`parts.with_part`); unchanged where there is none to choose or the
        completed plan does not check."""
        longer = with_part(self.llm, messages, text, parsed.plan["subtasks"][-1], tools,
                           "}]}", settings, log)
        if longer is None:
            return parsed, text
        try:
            return self.parse(longer, tools), longer
        except PlanValidationError:
            return parsed, text
