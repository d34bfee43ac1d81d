"""The `decline` probe: asks the model, in its own tool-calling format, whether any offered
tool fits the goal at all.

Why the model's native format: an instruction-tuned model with a tool-calling chat template
was trained to choose between calling a tool and answering in prose, in any language the
goal is written in. Under one of our plan grammars it never gets that choice (the grammar
admits only plans, and a 0.5B model almost never writes the refusal plan the grammar also
admits: 0 of 10 goals no tool answers, docs/BENCHMARKS.md). So before planning, the model
is shown the tool-calling prompt and left free; where it would rather reply than open a
call, that is a refusal, and the run ends declined without calling anything.

The probe reads the model's probability that its first token opens a call (`<tool_call>`,
a bare or fenced JSON object; `call_probability`) rather than one greedy sample, and
declines when it is below `DECLINE_BELOW`. One prompt evaluation, no generated token; a
backend that reads no probabilities reports its greedy continuation with probability 1,
which is the greedy probe again.

Why 0.3 (scripts/bench_decline.py, docs/BENCHMARKS.md; default model, 457 goals a tool
answers and 50 it does not: BFCL's development categories and the multilingual suite): the
probability is lower for goals not written in English (below 0.5: 15 of 47 answerable
German and French goals, 4 of 47 English ones), so the higher the threshold, the more
non-English goals are refused first. Against the former greedy 4-token probe, 0.3 refuses
18 fewer answerable goals (28 instead of 42 of 329 in the multilingual suite, 2 instead of
6 of 128 on BFCL) and 4 fewer unanswerable ones (BFCL irrelevance 24 instead of 26 of 40,
the suite's 4 instead of 6 of 10); 0.5 would refuse 9 more answerable goals than the greedy
probe for 2 more unanswerable ones. Two more signals were measured and not kept: the goal's
embedding similarity to the tools (separates BFCL's irrelevant questions well, but the
bundled MiniLM is English, so it refused 21 of 47 answerable French goals), and the
contrast with a catch-all search tool (kept the non-English goals, lost half of the
irrelevant ones).

The probe reads only the model's first token (does it open a call?), never the words of the
goal or of the reply.

The tools planner asks once more after its first turn, before anything runs
(`calls_invented`): calls that take values the goal never states were made up for a goal
no offered function fits, however sure the model was that it would call (`stated.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Protocol

from localagent.llm.base import LLM, Completion, Message
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.prompts import TOOLS_SYSTEM
from localagent.planners.techniques import Techniques
from localagent.tools.manual import openai_tools
from localagent.tools.spec import ToolSpec

CALL_OPENINGS = ("<", "{", "[", "`")  # `<tool_call>`, a bare or fenced JSON call
DECLINE_BELOW = 0.3  # decline when P(the first token opens a call) is below this
# After the first calls (the tools planner): decline when fewer than this share of their
# required values are stated by the goal, or when any is not and P(call) is below SURE.
STATED_BELOW = 0.5
SURE = 0.9


@dataclass(frozen=True)
class Thresholds:
    """Where `decline` refuses, for one model: P(call) `below` which the probe declines;
    after the first calls, a stated share below `stated_below`, or under 1 with P(call)
    below `sure`. Why per model: the probability a model gives its own call opener differs
    between models (the 1.5B is surer than the 0.5B on the same goals), so a threshold set
    on one declines answerable goals on the other. Calibrated by
    `scripts/calibrate_decline.py` and stored in the model's catalog entry (`decline`)."""

    below: float = DECLINE_BELOW
    stated_below: float = STATED_BELOW
    sure: float = SURE

    @classmethod
    def of(cls, llm: LLM) -> Thresholds:
        """The thresholds of `llm`'s catalog entry; the defaults for a model outside it."""
        from localagent.llm.catalog import catalog_entry

        entry = catalog_entry(llm.info.name)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (entry.decline if entry else {}).items() if k in known})


def first_turn(goal: str, instruct: bool = True,
               history: Sequence[Message] = ()) -> list[Message]:
    """The tool-calling planner's first turn: the goal, after a conversation's earlier
    messages (`history`) and, with `instruct`, after the planner's system text (else the
    chat template writes its own default system text, as for a user of the bare model)."""
    user: Message = {"role": "user", "content": goal}
    system: list[Message] = [{"role": "system", "content": TOOLS_SYSTEM}] if instruct else []
    return [*system, *history, user]


def can_probe(llm: LLM, settings: PlannerSettings) -> bool:
    """Whether the probe means anything: only under constraints (unconstrained runs may
    answer freely anyway) and only for a model whose chat template has a tool format (one
    without was never trained to choose between calling and answering: SmolLM2-135M opened
    a call on no BFCL case, so every goal, answerable or not, was declined)."""
    return settings.constrain and llm.info.supports_tools


def call_probability(llm: LLM, messages: Sequence[Message], schemas: list[dict],
                     log: GenerationLog) -> float:
    """P(the model's first token after `messages`, with `schemas` offered in its chat
    template, opens a call), among the tokens that show a choice (whitespace-only tokens
    show none and are left out). The probe's cost is logged with the run's."""
    nxt = llm.next_tokens(llm.format_chat(list(messages), tools=schemas))
    log.add(Completion(text=nxt.choices[0][0] if nxt.choices else "", usage=nxt.usage))
    shown = nxt.mass(lambda text: bool(text.strip()))
    if shown <= 0.0:
        return 1.0  # nothing but whitespace is likely: no sign of a refusal
    return nxt.mass(lambda text: text.lstrip().startswith(CALL_OPENINGS)) / shown


def probe(llm: LLM, messages: Sequence[Message], tools: Sequence[ToolSpec],
          settings: PlannerSettings, log: GenerationLog,
          schemas: list[dict] | None = None) -> float | None:
    """`call_probability` after `messages` with `tools` offered in the model's chat
    template; None when the probe cannot tell (`can_probe`)."""
    if not can_probe(llm, settings):
        return None
    return call_probability(llm, messages, schemas or openai_tools(tools), log)


def model_declines(llm: LLM, messages: Sequence[Message], tools: Sequence[ToolSpec],
                   settings: PlannerSettings, log: GenerationLog,
                   schemas: list[dict] | None = None) -> bool:
    """True when the model, after `messages` with `tools` offered in its chat template,
    is less likely than its threshold (`Thresholds.below`) to open a call. False when the
    probe cannot tell (`can_probe`)."""
    p = probe(llm, messages, tools, settings, log, schemas)
    return p is not None and p < Thresholds.of(llm).below


def calls_invented(p_call: float, share: float | None,
                   limits: Thresholds = Thresholds()) -> bool:
    """Whether first calls whose required values the goal states `share` of (None: they
    have none; `stated.stated_share`), made where the probe read `p_call`, were invented
    for a goal no offered function fits: fewer than `STATED_BELOW` stated, or not all
    where the model was not sure it would call (`p_call` below `SURE`).

    Why both (docs/BENCHMARKS.md, stop 40; BFCL development categories, 16 cases each,
    default model): the probe alone refuses 10 of 16 irrelevant questions. Of the 6 it
    lets through, the first calls of 2 state under half their required values and of 1
    more not all, with P(call) 0.58; 3 more refused. The answerable questions refused by
    the rule (5 of 64, all with P(call) 0.58-0.90 and one unstated value or more) were
    each answered wrong anyway. A goal a function fits but whose values the model must
    derive in words ("next month" as 1) keeps at least half stated when it is sure."""
    if share is None:
        return False
    return share < limits.stated_below or (share < 1.0 and p_call < limits.sure)


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
        planner.llm, planner.settings.framed(goal), planner.tools, planner.settings, log)
