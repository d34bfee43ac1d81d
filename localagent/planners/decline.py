"""The `decline` probe: asks the model, in its own tool-calling format, whether any offered
tool fits the goal at all.

Why the model's native format: an instruction-tuned model with a tool-calling chat template
was trained to choose between calling a tool and answering in prose, in any language the
goal is written in. Under one of our plan grammars it never gets that choice (the grammar
admits only plans, and a 0.5B model almost never writes the refusal plan the grammar also
admits: 0 of 10 goals no tool answers, docs/BENCHMARKS.md). So before planning, the model
writes a few tokens freely after the tool-calling prompt; a reply that does not open a call
is a refusal, and the run ends declined without calling anything.

The probe reads only the model's first characters (does it open a call?), never the words
of the goal or of the reply, so it holds for every language.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from localagent.llm.base import LLM, Message
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.prompts import TOOLS_SYSTEM
from localagent.planners.techniques import Techniques
from localagent.tools.manual import openai_tools
from localagent.tools.spec import ToolSpec

PROBE_TOKENS = 4  # tokens the model writes freely to show whether it opens a call
CALL_OPENINGS = ("<", "{", "[", "`")  # `<tool_call>`, a bare or fenced JSON call


def first_turn(goal: str) -> list[Message]:
    """The tool-calling planner's first turn: the system text and the goal."""
    return [{"role": "system", "content": TOOLS_SYSTEM}, {"role": "user", "content": goal}]


def can_probe(llm: LLM, settings: PlannerSettings) -> bool:
    """Whether the probe means anything: only under constraints (unconstrained runs may
    answer freely anyway) and only for a model whose chat template has a tool format (one
    without was never trained to choose between calling and answering: SmolLM2-135M opened
    a call on no BFCL case, so every goal, answerable or not, was declined)."""
    return settings.constrain and llm.info.supports_tools


def model_declines(llm: LLM, messages: Sequence[Message], tools: Sequence[ToolSpec],
                   settings: PlannerSettings, log: GenerationLog,
                   schemas: list[dict] | None = None) -> bool:
    """True when the model, left free after `messages` with `tools` offered in its chat
    template, replies without opening a call. False when the probe cannot tell
    (`can_probe`). Greedy, `PROBE_TOKENS` tokens; the output is logged with the run's."""
    if not can_probe(llm, settings):
        return False
    probe = llm.chat(list(messages), tools=schemas or openai_tools(tools),
                     max_tokens=PROBE_TOKENS, temperature=0.0, seed=settings.seed,
                     constraint=None)
    log.add(probe)
    return not probe.text.lstrip().startswith(CALL_OPENINGS)


def goal_declined(llm: LLM, goal: str, tools: Sequence[ToolSpec], settings: PlannerSettings,
                  log: GenerationLog) -> bool:
    """The probe for a planner whose own prompt is not the tool-calling one (tree,
    sequential, ReAct): the tool-calling planner's first turn for `goal` over `tools`."""
    return model_declines(llm, first_turn(goal), tools, settings, log)


class _PlanPlanner(Protocol):
    llm: LLM
    tools: list[ToolSpec]
    settings: PlannerSettings
    techniques: Techniques


def plan_declined(planner: _PlanPlanner, goal: str, settings: PlannerSettings | None,
                  log: GenerationLog) -> bool:
    """For the tree and sequential planners' first greedy plan of a goal (`settings` None or
    their own): with `decline`, the model's own choice whether any offered function fits.
    Re-plans and vote samples are not asked again (the caller passes only first plans)."""
    first = settings is None or settings == planner.settings
    return planner.techniques.decline and first and goal_declined(
        planner.llm, goal, planner.tools, planner.settings, log)
