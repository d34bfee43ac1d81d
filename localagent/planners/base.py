"""What every planner shares: settings, the generate-parse-retry loop, tool selection, metering.

Why one place: all four planners turn a prompt plus a constraint into checked data the same
way. A truncated, unparsable or invalid output never leaves this module: it is retried a
bounded number of times, then `PlanningError` is raised (DESIGN.md trap 2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from localagent.constraint import Constraint
from localagent.errors import (
    ConstraintError,
    InvalidPlanError,
    PlanningError,
    PlanValidationError,
    TruncatedOutputError,
)
from localagent.grammars import ensure_complete
from localagent.llm.base import LLM, Completion, GiveUp, Message, NextTokens, Usage
from localagent.llm.delegating import DelegatingLLM
from localagent.planners.techniques import TechniqueChanges, Techniques, resolve

if TYPE_CHECKING:
    from localagent.retrieval import FilterOptions, ToolIndex
    from localagent.tools.registry import ToolRegistry
    from localagent.tools.spec import ToolSpec

T = TypeVar("T")
TRUNCATION_TEMPERATURE = 0.7
# Why a run ends when the model wrote the refusal plan (the `decline` technique).
NO_PLAN_MESSAGE = "declined: the model found that no offered function reaches the goal"


@dataclass(frozen=True)
class PlannerSettings:
    """How a planner generates. `constrain=False` generates with `constraint=None` and
    parses leniently (to measure what the grammar adds); `techniques`: see techniques.py,
    None for each planner's own measured default, `TechniqueChanges` for changes to it
    (`for_planner` resolves both). `english(goal)`: the goal in English where the filter
    had the model translate it (`retrieval/translation.py`), else "": the plan planners
    show it under the goal when it differs from it; the plan is still checked against the
    goal as written. `context`: the earlier turns of a conversation
    (`Conversation.context`), shown before the goal in the plan and ReAct prompts
    (`framed`); `history`: the same turns as chat messages, for the tool-calling
    planner; the techniques that read the goal's stated values read the goal alone,
    so an earlier turn's numbers are never forced into this turn's calls."""

    constrain: bool = True
    retries: int = 2  # extra attempts after the first bad output
    max_tokens: int = 400
    temperature: float = 0.0
    seed: int = 0
    techniques: Techniques | TechniqueChanges | None = None
    english: Callable[[str], str] | None = field(default=None, compare=False)
    context: str = ""
    history: tuple[Message, ...] = ()  # the same turns as chat messages (tools planner)

    def framed(self, goal: str) -> str:
        """`goal` as a prompt shows it: after the conversation's earlier turns, if any."""
        return f"{self.context}\n\nNow: {goal}" if self.context else goal

    def for_planner(self, planner: str, model: str | None = None
                    ) -> tuple[PlannerSettings, Techniques]:
        """These settings with the techniques resolved for `planner` (on `model`, whose
        catalog entry may hold its own defaults), and the techniques; `UsageError` when a
        change removes a switch that planner's default does not have."""
        t = resolve(self.techniques, planner, model)
        return replace(self, techniques=t), t


@dataclass
class GenerationLog:
    """What one planning run cost and how often the model's output was rejected."""

    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    parse_failures: int = 0  # outputs that did not parse (format)
    validation_failures: int = 0  # parsed, but an unknown function or bad arguments
    truncations: int = 0
    errors: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)

    def add(self, completion: Completion) -> None:
        self.usage = self.usage + completion.usage
        self.attempts += 1
        self.raw.append(completion.text)


def generate_checked(
    llm: LLM,
    prompt: str | Sequence[Message],
    parse: Callable[[str], T],
    settings: PlannerSettings,
    log: GenerationLog,
    *,
    constraint: Constraint | None,
    stop: Sequence[str] = (),
    tools: Sequence[dict[str, Any]] | None = None,
    max_tokens: int | None = None,
    give_up: GiveUp | None = None,
    watch: GiveUp | None = None,
) -> T:
    """Generate, reject truncated or invalid output, retry; the parsed value or PlanningError.

    `prompt` is text (completion) or chat messages (rendered with the model's template).
    Retries use seed + attempt so that a deterministic sampler does not repeat itself when
    temperature > 0; at temperature 0 a retry only helps after a truncation if the caller
    raises max_tokens, so we double it on truncation, and after two truncations (a greedy
    loop) the next attempt samples at TRUNCATION_TEMPERATURE.

    Unconstrained (`settings.constrain` False), `give_up` ends an output as soon as it can
    no longer parse, and after a rejected greedy output the retry samples: a greedy retry
    of the same prompt would write the same text again. `watch` sees the text after every
    token, constrained or not (`EarlyCalls.watch`: it starts calls, never stops one).
    """
    used = constraint if settings.constrain else None
    budget = max_tokens or settings.max_tokens
    last = ""
    temperature, truncated, rejected = settings.temperature, 0, 0
    for attempt in range(settings.retries + 1):
        if temperature == 0 and (truncated >= 2 or (used is None and rejected)):
            # Greedy decoding that ran out twice is stuck in a loop inside the grammar's
            # bounds (a base model writing digits until the budget ends), and a rejected
            # free output would be written again: sample instead.
            temperature = TRUNCATION_TEMPERATURE
        kwargs: dict[str, Any] = {"max_tokens": budget, "stop": stop, "constraint": used,
                                  "temperature": temperature,
                                  "seed": settings.seed + attempt,
                                  "give_up": _criterion(give_up if used is None else None,
                                                        watch)}
        if isinstance(prompt, str):
            completion = llm.complete(prompt, **kwargs)  # type: ignore[arg-type]
        else:
            completion = llm.chat(prompt, tools=tools, **kwargs)  # type: ignore[arg-type]
        log.add(completion)
        try:
            return parse(ensure_complete(completion))
        except TruncatedOutputError as exc:
            log.truncations += 1
            truncated += 1
            last = exc.one_line()
            budget *= 2
        except InvalidPlanError as exc:
            log.validation_failures += 1
            rejected += 1
            last = exc.one_line()
        except PlanValidationError as exc:
            log.parse_failures += 1
            rejected += 1
            last = exc.one_line()
        log.errors.append(last)
    raise PlanningError(
        f"no valid output after {settings.retries + 1} attempts: {last}",
        hint="try another planner, a larger model, or --no-constrain to compare")


def replan_messages(messages: list[Message], previous: str, error: str) -> list[Message]:
    """`messages` plus the failed plan and what went wrong, asking for a corrected plan
    (LLMCompiler's joiner idea: the error usually names the wrong argument or function)."""
    return [*messages, {"role": "assistant", "content": previous},
            {"role": "user", "content": f"Running this plan failed: {error}\n"
             "Write a corrected plan for the same goal.\nPlan:"}]


def select_specs(
    goal: str,
    registry: ToolRegistry,
    options: FilterOptions | None = None,
    index: ToolIndex | Callable[[], ToolIndex] | None = None,
    translate: Callable[[str], str] | None = None,
) -> list[ToolSpec]:
    """The functions a planner may use for `goal`: all, or those the filter keeps.

    Exclusions apply without an index; semantic filtering (a threshold or a count) needs
    the embedding index: `index`, or the one a callable `index` opens (called only then),
    or one opened in the default location when none is given.
    `translate(goal)`: the goal in English, searched too when `options.translate` and the
    filter really ranks (`retrieval/translation.py`); never called otherwise.
    """
    specs = registry.specs()
    if options is None:
        return specs
    few = (options.relevancy_threshold is None and options.max_relevant_functions is not None
           and len(specs) <= options.max_relevant_functions)
    if not options.active or few:  # nothing to rank: no need for the embedding index
        return [s for s in specs if options.allows(s)]
    from localagent.retrieval import filter_tools

    if index is None:
        from localagent.retrieval import ToolIndex

        index = ToolIndex()
    elif callable(index):
        index = index()
    scored = filter_tools(goal, specs, options, index, translate)
    if not scored:
        raise PlanningError("the tool filter kept no function for this goal",
                            hint="lower --threshold or raise --max-tools")
    keep = {t.spec.qualified_name for t in scored}
    return [s for s in specs if s.qualified_name in keep]


class MeteredLLM(DelegatingLLM):
    """Delegates to an LLM and adds up the usage of every call through it.

    The agent hands the same metered instance to the planner and to the registry (prompt
    functions), so an agent run's usage covers both. Other attributes (`reset_cache`,
    `llama`...) pass through to the wrapped model.
    """

    def __init__(self, inner: LLM) -> None:
        super().__init__(inner)
        self._usage = Usage()
        self._lock = threading.Lock()

    @property
    def usage(self) -> Usage:
        return self._usage

    def complete(self, prompt: str, **kwargs: Any) -> Completion:  # type: ignore[override]
        completion = self.inner.complete(prompt, **kwargs)
        with self._lock:
            self._usage = self._usage + completion.usage
        return completion

    def next_tokens(self, prompt: str, *, top_k: int = 64) -> NextTokens:
        nxt = self.inner.next_tokens(prompt, top_k=top_k)
        with self._lock:
            self._usage = self._usage + nxt.usage
        return nxt


def usage_since(llm: LLM, before: Usage) -> Usage:
    """The usage recorded by a MeteredLLM since `before` (Usage() for other models)."""
    if not isinstance(llm, MeteredLLM):
        return Usage()
    now = llm.usage
    return Usage(calls=now.calls - before.calls,
                 prompt_tokens=now.prompt_tokens - before.prompt_tokens,
                 prompt_tokens_reused=now.prompt_tokens_reused - before.prompt_tokens_reused,
                 completion_tokens=now.completion_tokens - before.completion_tokens,
                 seconds=now.seconds - before.seconds,
                 prompt_tokens_loaded=now.prompt_tokens_loaded - before.prompt_tokens_loaded)


@dataclass(frozen=True)
class PlannerEvent:
    """A planner's own trace record (an LLM step), alongside the executor's call events."""

    kind: str  # "plan_created" | "react_thought" | "react_step" | "tool_turn" | "planning_failed"
    detail: dict[str, Any]
    at: float

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.detail, "at": self.at}


def _criterion(give_up: GiveUp | None, watch: GiveUp | None) -> GiveUp | None:
    """`give_up`, with `watch` shown every text first."""
    if watch is None or give_up is None:
        return watch or give_up

    def both(text: str) -> bool:
        watch(text)
        return give_up(text)

    return both


def first_buildable(build: Callable[..., Constraint], variants: Sequence[dict[str, Any]],
                    **options: Any) -> Constraint:
    """`build(**variant, **options)` for the first of `variants` (the most restricted
    first) that some plan can meet; `build(**options)` when none can. A variant whose
    restrictions are all empty, or one tried already, is skipped.

    Why: a restriction read off the goal (more values or numbers than a plan of the
    allowed depth can pass) can make the grammar admit nothing; the planner then drops
    restrictions in a fixed order rather than fail.
    """
    tried: list[dict[str, Any]] = []
    for extra in variants:
        if any(extra.values()) and extra not in tried:
            tried.append(extra)
            try:
                return build(**extra, **options)
            except ConstraintError:
                pass
    return build(**options)
