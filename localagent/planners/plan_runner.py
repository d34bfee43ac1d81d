"""Plan, execute, and (by technique) re-plan on failure and vote over sampled plans.

Why here and not in the planners: the tree and sequential planners only turn a goal into
a checked plan; the two techniques that need execution results sit between the planner
and the executor, the same for both kinds of plan:
- `replan=N`: when execution fails (a tool raised, a reference had no value, the plan was
  rejected by the executor's checks), the failing plan and the error go back to the
  planner, at most N times (LLMCompiler's joiner).
- relaxing: a tree plan made under `values` (every enum value the goal writes is passed)
  that fails to execute, re-planning included, is followed by one plan without it
  (`TreePlanner.relaxed`): goal values may be alternatives no single plan passes all of.
- `vote=K`: the greedy plan plus K-1 plans sampled at temperature 0.7 with other seeds;
  identical plans execute once; the answer is the value most plans agree on (ties go to
  the earlier plan, so the greedy plan wins a tie).

Side effects: executing a candidate only to compare its value would run its calls for
nothing. So when any function offered to the planner has side effects
(`ToolSpec.side_effects`), `vote=K` picks by the plans themselves: the K plans are made
first, none is executed, and only the plan most samples wrote (ties to the earlier, so the
greedy plan wins a tie) runs, with its own re-planning. `PlanRun.votes` then counts plans
(keyed by their JSON), not values. Re-planning runs one plan after another, never
speculatively; that a re-planned plan repeating a side-effect call that already ran gets
the recorded result, not a second run, is the run's `SideEffectLedger`'s job (share one
among the executors `new_executor` makes, as `Agent.run` does).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from localagent.early_calls import EarlyCalls
from localagent.errors import LocalAgentError, PlanningError, PlanValidationError
from localagent.execution import ExecutionResult
from localagent.executor import Executor, FieldRepair
from localagent.llm.base import LLM
from localagent.plan import SequentialPlan, TreePlan, plan_to_dict
from localagent.plan_nodes import FieldPath, path_text
from localagent.planners.base import GenerationLog, PlannerEvent, PlannerSettings
from localagent.planners.techniques import Techniques

VOTE_TEMPERATURE = 0.7
OnEvent = Callable[[Any], None]


class PlanPlanner(Protocol):
    llm: LLM
    settings: PlannerSettings
    techniques: Techniques

    kind: str

    def plan(self, goal: str, log: GenerationLog | None = None, *, failed: Any = None,
             error: str = "", settings: PlannerSettings | None = None,
             watch: Callable[[str], bool] | None = None) -> Any: ...


@dataclass
class Attempt:
    """One executed plan: the plan, its value or error, and which sample/re-plan it was."""

    plan: TreePlan | SequentialPlan
    result: ExecutionResult | None
    error: str | None
    sample: int
    replan: int

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {"sample": self.sample, "replan": self.replan, "plan": plan_to_dict(self.plan),
                "value": self.result.value if self.result and self.ok else None,
                "error": self.error}


@dataclass
class PlanRun:
    """What plan-and-execute produced: the chosen attempt (or the last error) and all."""

    chosen: Attempt | None
    attempts: list[Attempt] = field(default_factory=list)
    error: str | None = None
    votes: dict[str, int] = field(default_factory=dict)
    executed: dict[str, Attempt] = field(default_factory=dict, repr=False)  # by plan JSON


def plan_and_execute(planner: PlanPlanner, goal: str, new_executor: Callable[[], Executor],
                     log: GenerationLog, on_event: OnEvent | None = None) -> PlanRun:
    """Plan and execute `goal` with the planner's techniques (replan, vote)."""
    t = planner.techniques
    run = PlanRun(chosen=None)
    if t.vote > 1 and _offers_side_effects(planner):
        return _vote_by_plans(planner, goal, new_executor, log, run, on_event)
    for sample in range(t.vote):
        settings = _sample_settings(planner, sample)
        try:
            _solve(planner, goal, new_executor, log, settings, sample, run, on_event)
        except PlanningError as exc:
            run.error = run.error or exc.one_line()
    good = [a for a in run.attempts if a.ok]
    if not good:
        failed = [a for a in run.attempts if a.error]
        run.error = failed[-1].error if failed else run.error or "no plan"
        return run
    run.error = None
    if t.vote == 1:
        run.chosen = good[-1]
        return run
    finals = _finals(run.attempts)
    keys = [_key(a.result.value) for a in finals if a.ok]  # type: ignore[union-attr]
    run.votes = dict(Counter(keys))
    best = max(run.votes.values())
    winner = next(k for k in keys if run.votes[k] == best)  # earliest sample wins a tie
    run.chosen = next(a for a in finals if a.ok and _key(a.result.value) == winner)  # type: ignore[union-attr]
    return run


def _offers_side_effects(planner: PlanPlanner) -> bool:
    return any(getattr(spec, "side_effects", False) for spec in getattr(planner, "tools", ()))


def _sample_settings(planner: PlanPlanner, sample: int) -> PlannerSettings:
    """Sample 0 is the planner's own (greedy) settings; others sample with other seeds."""
    if sample == 0:
        return planner.settings
    return replace(planner.settings, temperature=VOTE_TEMPERATURE,
                   seed=planner.settings.seed + 1000 * sample)


def _vote_by_plans(planner: PlanPlanner, goal: str, new_executor: Callable[[], Executor],
                   log: GenerationLog, run: PlanRun, on_event: OnEvent | None) -> PlanRun:
    """`vote=K` with side-effect functions offered: K plans, none executed; the plan most
    samples wrote runs (with its re-planning)."""
    candidates: list[tuple[int, Any, str]] = []  # (sample, planned, plan JSON)
    for sample in range(planner.techniques.vote):
        try:
            planned = planner.plan(goal, log, settings=_sample_settings(planner, sample))
        except PlanningError as exc:
            run.error = run.error or exc.one_line()
            continue
        candidates.append((sample, planned, planned.plan.to_json(indent=None)))
    if not candidates:
        run.error = run.error or "no plan"
        return run
    run.votes = dict(Counter(key for _, _, key in candidates))
    best = max(run.votes.values())
    sample, planned, _ = next(c for c in candidates if run.votes[c[2]] == best)
    try:
        _solve(planner, goal, new_executor, log, _sample_settings(planner, sample), sample,
               run, on_event, first=planned)
    except PlanningError as exc:  # a re-plan failed to plan
        run.error = exc.one_line()
    good = [a for a in run.attempts if a.ok]
    run.chosen = good[-1] if good else None
    if good or run.attempts:
        run.error = None if good else run.attempts[-1].error
    return run


def _solve(planner: PlanPlanner, goal: str, new_executor: Callable[[], Executor],
           log: GenerationLog, settings: PlannerSettings, sample: int, run: PlanRun,
           on_event: OnEvent | None, first: Any = None) -> None:
    """One sample: plan (unless `first` is its plan already), execute, and re-plan with the
    error up to `replan` times; when every plan failed and the planner has a `relaxed` form
    (the tree planner without `values`), one more plan from that."""
    relaxed = getattr(planner, "relaxed", lambda: None)()
    rounds = planner.techniques.replan + 1
    for replan in range(rounds + (relaxed is not None)):
        executor = new_executor()
        early = (EarlyCalls(executor, "tree" if planner.kind == "tree" else "sequential")
                 if executor.policy.stream and planner.kind in ("tree", "sequential") else None)
        executor.early, watch = early, (early.watch if early is not None else None)
        executor.repair = _field_repair(planner, goal, log, settings, on_event)
        try:
            if replan == 0:
                planned = first if first is not None else planner.plan(
                    goal, log, settings=settings, watch=watch)
            elif replan == rounds:
                planned = relaxed.plan(goal, log, settings=settings, watch=watch)
            else:
                planned = planner.plan(goal, log, failed=planned, watch=watch,
                                       error=run.attempts[-1].error or "", settings=settings)
        except PlanningError:
            if early is not None:
                early.finish(on_event, "the plan was rejected")
            raise
        key = planned.plan.to_json(indent=None)
        if key in run.executed:  # an identical plan ran already: same outcome
            attempt = replace(run.executed[key], sample=sample, replan=replan)
        else:
            attempt = _execute(planned.plan, executor, sample, replan, on_event)
            run.executed[key] = attempt
        if early is not None:
            early.finish(on_event, "the plan that ran did not use them")
        run.attempts.append(attempt)
        if attempt.ok:
            return


def _field_repair(planner: PlanPlanner, goal: str, log: GenerationLog,
                  settings: PlannerSettings, on_event: OnEvent | None) -> FieldRepair:
    """The executor's answer to a field the plan named that its record lacks: the model's
    choice among the record's parts (`observe.repair_field`), reported as a planner event."""
    from localagent.planners.observe import repair_field

    def repair(value: Any, wanted: FieldPath, access: str) -> FieldPath | None:
        try:
            chosen = repair_field(planner.llm, goal, value, wanted, access, settings, log)
        except LocalAgentError:  # no valid choice: the access fails as it would have
            chosen = None
        if on_event is not None:
            on_event(PlannerEvent("field_repaired", {
                "access": access, "took": path_text(chosen, lead=False) if chosen else None},
                time.monotonic()))
        return chosen

    return repair


def _execute(plan: TreePlan | SequentialPlan, executor: Executor, sample: int, replan: int,
             on_event: OnEvent | None) -> Attempt:
    if on_event is not None:
        on_event(PlannerEvent("plan_created", {"plan": plan_to_dict(plan), "sample": sample,
                                               "replan": replan}, time.monotonic()))
    try:
        result = executor.run_sync(plan, on_event=on_event)
    except PlanValidationError as exc:  # the model's plan failed the executor's checks
        return Attempt(plan, None, exc.one_line(), sample, replan)
    error = None if result.ok else result.error.message  # type: ignore[union-attr]
    return Attempt(plan, result, error, sample, replan)


def _finals(attempts: list[Attempt]) -> list[Attempt]:
    """The last attempt of each sample (the one its re-planning ended with)."""
    last: dict[int, Attempt] = {}
    for a in attempts:
        last[a.sample] = a
    return [last[s] for s in sorted(last)]


def _key(value: Any) -> str:
    """Values that mean the same vote the same (5 and 5.0; key order of objects)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        value = " ".join(value.split()).lower()
    return json.dumps(value, sort_keys=True, default=str)
