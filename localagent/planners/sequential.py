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
from localagent.llm.base import LLM, Message
from localagent.plan import INPUT, SequentialPlan, plan_from_dict
from localagent.planners.answer_kind import answer_roots
from localagent.planners.base import (
    NO_PLAN_MESSAGE,
    GenerationLog,
    PlannerSettings,
    first_buildable,
    generate_checked,
    replan_messages,
)
from localagent.planners.decline import plan_declined
from localagent.planners.examples import choose_examples
from localagent.planners.head import head_roots, narrow_roots
from localagent.planners.layout import plan_manual
from localagent.planners.mentions import anchor_to_goal
from localagent.planners.named import AskedFunctions, asked_functions
from localagent.planners.nouns import needed_functions
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
        """The functions (input piped) as this goal's plan sees them (`named`, `mentions`)."""
        tools = self._unanchored(goal)
        return anchor_to_goal(tools, goal) if self.techniques.mentions else tools

    def _unanchored(self, goal: str) -> list[ToolSpec]:
        """The functions (input piped) before `mentions`: narrowed by `named`, if on."""
        asked = self._asked(goal)
        return asked.narrowed() if asked else self._piped

    def _asked(self, goal: str) -> AskedFunctions | None:
        """With `named`, what a prose goal asks for (named.py); else None."""
        return asked_functions(goal, self._piped) if self.techniques.named and goal else None

    def constraint(self, tools: Sequence[ToolSpec] | None = None, goal: str = "") -> Constraint:
        """The plan grammar; with `answer` and a goal, one whose last step returns the kind
        of value the goal asks for (answer_kind.py), unless no step can; with `named`,
        one calling every function the goal names, from a phrase of the goal; with
        `nouns`, one calling a function of each group its possessives and of-phrases name
        (nouns.py; dropped first when no plan can meet it)."""
        t = self.techniques
        shown = self._piped if tools is None else tools
        options: dict = {"max_steps": MAX_STEPS, "bounds": BOUNDS, "pipe": t.pipe,
                         "refs": "backward" if t.backrefs else "any", "reasoning_steps": t.steps,
                         "reasoning_chars": REASONING_CHARS if t.shows_reasoning else 0,
                         "ordered": t.ordered, "distinct": t.distinct, "typed": t.typed,
                         "decline": t.decline}
        asked = self._asked(goal)
        if asked and tools is not None:  # a recipe: a pure pipe, from a phrase of the goal
            options.update(must=asked.required, inputs=asked.phrases, pipe=True)
        roots = answer_roots(goal, shown) if t.answer and goal else None
        if t.head and goal:
            roots = narrow_roots(roots, head_roots(goal, shown))
        needs = needed_functions(goal, shown) if t.nouns and goal and not asked else []
        grammar = first_buildable(
            lambda **kw: sequential_plan(shown, **kw),
            ({"roots": roots, "needs": needs}, {"roots": roots, "needs": []}), **options)
        return replace(grammar, fast_forward=True)  # a plan is mostly forced JSON

    def messages(self, goal: str, tools: Sequence[ToolSpec] | None = None) -> list[Message]:
        """The prompt; with `tools` narrowed for the goal, the manual lists the arguments'
        own values and the goal's follow it (`layout.plan_manual`, as in the tree planner:
        one manual for every goal over these tools)."""
        t = self.techniques
        shown, note = (self.tools, "") if tools is None else plan_manual(
            self._unanchored(goal), tools, t.compact)
        return sequential_prompt(goal, shown, choose_examples(goal, t), note=note,
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
             settings: PlannerSettings | None = None) -> PlannedSequence:
        """A checked plan; with `failed` and `error`, a corrected one (re-planning)."""
        log = log if log is not None else GenerationLog()
        if failed is None and plan_declined(self, goal, settings, log):
            raise DeclinedError(NO_PLAN_MESSAGE)
        tools = self.tools_for(goal)
        shown = self.techniques.mentions or self.techniques.named
        messages = self.messages(goal, tools if shown else None)
        if failed is not None:
            messages = replan_messages(messages, failed.text, error)
        parsed = generate_checked(
            self.llm, messages,
            lambda text: self.parse(text, tools),
            settings or self.settings, log, constraint=self.constraint(tools, goal),
            give_up=json_object_lost)
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
