"""The one executor: runs call trees, sequential plans, single steps and batches of calls.

Every planner ends here: tree and sequential plans run whole; ReAct and tool-calling loops
call `run_call` / `run_calls` once per model turn. One place therefore owns concurrency,
timeouts, budgets, the error policy and the trace.

- A call's nested calls are evaluated first, concurrently (asyncio); the registry runs
  blocking tools in their own threads, so the executor bounds how many calls are in
  flight at once (`ExecutionPolicy.max_workers`).
- Sequential plans follow Semantic Kernel: each step's output becomes `$input`; a step
  whose function has an `input` parameter and does not set it receives it. Step k's
  output is also `$k` / `#Ek`, and `$name` when the step names its output.
- Tool problems (raised, timed out, unserialisable, bad arguments) are data: recorded in
  the trace, and the run ends with an `ExecutionResult` whose `error` says why. Under
  error policy "continue", calls that do not need the failed value still run. Running out
  of the budget of calls or seconds always ends the run (`BudgetExceededError` as data).
- Bad plans are bad input: `run_tree` / `run_sequential` validate first and raise
  PlanValidationError before anything runs.
- A function with side effects (`ToolSpec.side_effects`) goes through the run's
  `SideEffectLedger` (`localagent/side_effects.py`): asked for approval first, run at most
  once per distinct call across every executor sharing the ledger; a repeat gets the
  recorded result, a refusal is a tool error of kind "refused", and a dry run gives a
  placeholder. Such calls run one at a time. `CallFinished.source` says which happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from typing_extensions import assert_never

from localagent.budget import Budget, BudgetSpent
from localagent.execution import ExecutionPolicy, ExecutionResult, RunError
from localagent.grammar.types import as_text, passed_as_text
from localagent.plan import INPUT, Call, Ref, SequentialPlan, TreePlan, Value, validate
from localagent.plan_nodes import (
    FieldAccessError,
    FieldPath,
    MissingKeyError,
    follow,
    path_text,
)
from localagent.side_effects import Recorded, SideEffectLedger, ToolCallRequest, effect_request
from localagent.tools.spec import ToolError, ToolResult
from localagent.trace import (
    CallCancelled,
    CallFinished,
    CallSkipped,
    CallStarted,
    Event,
    RunFinished,
)

if TYPE_CHECKING:
    from localagent.tools.registry import ToolRegistry

__all__ = ["ExecutionPolicy", "ExecutionResult", "Executor", "OnEvent", "RunError"]

OnEvent = Callable[[Event], None]
# (a result, the field path a plan named that it lacks, the access as text) -> a path of
# that result to take instead, or None
FieldRepair = Callable[[Any, FieldPath, str], "FieldPath | None"]


class EarlyResults(Protocol):
    """Calls started while their plan was generated (`early_calls.EarlyCalls`)."""

    def result_for(self, call: Call, step: int | None = None
                   ) -> Future[ExecutionResult] | None: ...


_EARLY_ROOT = "call"  # the path of `run_call`'s call (and of a call run early)
_GRACE = 1.0  # seconds past a call's timeout before the executor stops waiting itself


class _Failed(Exception):
    """A value could not be computed; carries the error that explains it."""

    def __init__(self, error: RunError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True)
class _Missing:
    """A context entry whose producing call failed (error policy "continue")."""

    error: RunError


@dataclass
class _Run:
    """State of one run: its trace, results so far, and whether it must stop."""

    on_event: OnEvent | None
    context: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)
    calls: int = 0
    fatal: RunError | None = None
    in_flight: set[asyncio.Task[Any]] = field(default_factory=set)

    def emit(self, event: Event) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def stop(self, error: RunError) -> None:
        """End the run: later calls are skipped, calls in flight are cancelled."""
        if self.fatal is None:
            self.fatal = error
            for task in self.in_flight:
                task.cancel()


class Executor:
    """Runs plans and calls against one registry under one policy (see module docstring)."""

    def __init__(
        self,
        registry: ToolRegistry,
        policy: ExecutionPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        effects: SideEffectLedger | None = None,
    ) -> None:
        """`effects`: the run's ledger of side-effect calls, shared by every executor of one
        run; None gives this executor its own, without an approver (every side-effect call
        is refused)."""
        self.registry = registry
        self.policy = policy or ExecutionPolicy()
        self.effects = effects if effects is not None else SideEffectLedger()
        self._clock = clock
        self._ids = 0
        self._id_lock = threading.Lock()
        self.budget = Budget(self.policy.max_calls, self.policy.max_seconds, clock)
        self._slots: weakref.WeakKeyDictionary[Any, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        # calls started while their plan was generated (early_calls.py); set per plan
        self.early: EarlyResults | None = None
        # asked when a field a plan takes is not in its result (plan_runner: the model
        # chooses among the result's own fields); None: the failure stands
        self.repair: FieldRepair | None = None

    def reset_budget(self) -> None:
        """Start counting calls and seconds afresh (e.g. for the next agent run)."""
        self.budget.reset()

    # --- public async API -------------------------------------------------------------

    async def run(self, plan: SequentialPlan | TreePlan, *, on_event: OnEvent | None = None,
                  validate_first: bool = True) -> ExecutionResult:
        """Run either kind of plan (validated first unless told otherwise)."""
        if isinstance(plan, TreePlan):
            return await self.run_tree(plan, on_event=on_event, validate_first=validate_first)
        if isinstance(plan, SequentialPlan):
            return await self.run_sequential(plan, on_event=on_event,
                                             validate_first=validate_first)
        assert_never(plan)

    async def run_tree(self, plan: TreePlan, *, on_event: OnEvent | None = None,
                       validate_first: bool = True) -> ExecutionResult:
        """Evaluate the tree bottom-up; its value is the root call's value."""
        if validate_first:
            validate(plan, self.registry, max_depth=self.policy.max_depth)
        run = _Run(on_event)
        return await self._finish(run, self._eval_call(plan.root, "root", None, run))

    async def run_sequential(self, plan: SequentialPlan, *, on_event: OnEvent | None = None,
                             validate_first: bool = True) -> ExecutionResult:
        """Run the steps in order, piping outputs; the value is the last step's output."""
        if validate_first:
            validate(plan, self.registry, max_depth=self.policy.max_depth)
        run = _Run(on_event, context={INPUT: plan.input})
        return await self._finish(run, self._steps(plan, run))

    async def run_call(self, call: Call, *, context: Mapping[str, Any] | None = None,
                       on_event: OnEvent | None = None) -> ExecutionResult:
        """One step of a ReAct / tool-calling loop. Not validated first: an unknown
        function or bad arguments come back as the result's error, for the model to see.
        `context` gives the values of references (`$name` -> context["name"])."""
        run = _Run(on_event, context=dict(context or {}))
        return await self._finish(run, self._eval_call(call, _EARLY_ROOT, None, run))

    async def run_calls(self, calls: Sequence[Call], *, context: Mapping[str, Any] | None = None,
                        on_event: OnEvent | None = None) -> tuple[ExecutionResult, ...]:
        """A batch of independent calls (one model turn), run concurrently; one failing does
        not cancel the others. Results are in the order of `calls`."""
        runs = [self.run_call(c, context=context, on_event=on_event) for c in calls]
        return tuple(await asyncio.gather(*runs))

    # --- sync wrappers ----------------------------------------------------------------

    def run_sync(self, plan: SequentialPlan | TreePlan, **kwargs: Any) -> ExecutionResult:
        return _run_sync(self.run(plan, **kwargs))

    def run_tree_sync(self, plan: TreePlan, **kwargs: Any) -> ExecutionResult:
        return _run_sync(self.run_tree(plan, **kwargs))

    def run_sequential_sync(self, plan: SequentialPlan, **kwargs: Any) -> ExecutionResult:
        return _run_sync(self.run_sequential(plan, **kwargs))

    def run_call_sync(self, call: Call, **kwargs: Any) -> ExecutionResult:
        return _run_sync(self.run_call(call, **kwargs))

    def run_calls_sync(self, calls: Sequence[Call], **kwargs: Any) -> tuple[ExecutionResult, ...]:
        return _run_sync(self.run_calls(calls, **kwargs))

    # --- evaluation -------------------------------------------------------------------

    async def _finish(self, run: _Run, work: Any) -> ExecutionResult:
        start = self._clock()
        self.budget.start()
        value, error = None, None
        try:
            value = await work
        except _Failed as failed:
            error = run.fatal or failed.error
        seconds = self._clock() - start
        run.emit(RunFinished(ok=error is None, result=value,
                             error=None if error is None else error.message,
                             calls=run.calls, seconds=seconds, at=self._clock()))
        return ExecutionResult(value=value, error=error, events=tuple(run.events),
                               calls=run.calls, seconds=seconds, errors=tuple(run.errors))

    async def _steps(self, plan: SequentialPlan, run: _Run) -> Any:
        value: Any = plan.input
        for i, step in enumerate(plan.steps):
            call = self.step_call(step.call)
            early = self.early.result_for(call, step=i) if self.early is not None else None
            try:
                if early is not None:
                    value = await self._take_early(early, f"subtasks[{i}]", None, run)
                else:
                    value = await self._eval_call(call, f"subtasks[{i}]", None, run)
            except _Failed as failed:
                if run.fatal is not None:
                    raise
                value = _Missing(failed.error)
            names = [INPUT, str(i + 1)] + ([step.output] if step.output else [])
            run.context.update({name: value for name in names})
        if isinstance(value, _Missing):
            raise _Failed(value.error)
        return value

    def step_call(self, call: Call) -> Call:
        """A sequential step's call as it runs: a function with an `input` parameter that
        the step does not set receives the previous output (`$input`)."""
        if INPUT not in call.args and self._has_param(call.function, INPUT):
            return Call(function=call.function, args={**call.args, INPUT: Ref(name=INPUT)},
                        field=call.field)
        return call

    async def _take_early(self, started: Future[ExecutionResult], path: str,
                          parent_id: int | None, run: _Run) -> Any:
        """The value of a call started while its plan was generated: its events join this
        run's trace (CallFinished `source="early"`), placed where the call sits here."""
        result = await asyncio.wrap_future(started)
        for event in result.events:
            if not isinstance(event, RunFinished):
                run.emit(_placed(event, path, parent_id))
        run.calls += result.calls
        if result.error is None:
            return result.value
        run.errors.extend(result.errors)
        if self.policy.on_error == "stop":
            run.stop(result.error)
        raise _Failed(result.error)

    async def _eval_call(self, call: Call, path: str, parent_id: int | None, run: _Run) -> Any:
        early = self.early.result_for(call) if self.early is not None else None
        if early is not None:
            return await self._take_early(early, path, parent_id, run)
        call_id = self._next_id()
        names = list(call.args)
        outcomes = await asyncio.gather(
            *(self._eval_arg(call.args[n], f"{path}.args.{n}", call_id, run) for n in names),
            return_exceptions=True,
        )
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        for outcome in failures:
            if not isinstance(outcome, _Failed):
                raise outcome
        if failures:
            first = failures[0].error  # type: ignore[attr-defined]
            reason = (f"run stopped: {run.fatal.message}" if run.fatal
                      else f"an argument failed: {first.message}")
            run.emit(CallSkipped(call.function, reason, self._clock(), parent_id, path))
            raise _Failed(first)
        args = self._fit_strings(call, dict(zip(names, outcomes)))
        value = await self._invoke(call.function, args, call_id, parent_id, path, run)
        if not call.field:
            return value
        return self._field(value, call.field, f"{call.function}(...){path_text(call.field)}",
                           call.function, call_id, path, run)

    async def _eval_arg(self, arg: Any, path: str, parent_id: int, run: _Run) -> Any:
        if isinstance(arg, Call):
            return await self._eval_call(arg, path, parent_id, run)
        if isinstance(arg, Ref):
            return self._lookup(arg, run)
        if isinstance(arg, Value):
            return arg.value
        if isinstance(arg, tuple):
            items = await asyncio.gather(
                *(self._eval_arg(a, f"{path}[{i}]", parent_id, run) for i, a in enumerate(arg)),
                return_exceptions=True,
            )
            for item in items:
                if isinstance(item, BaseException):
                    raise item
            return list(items)
        return arg

    def _lookup(self, ref: Ref, run: _Run) -> Any:
        if ref.name not in run.context:
            raise _Failed(RunError("reference", f"reference {ref} has no value"))
        value = run.context[ref.name]
        if isinstance(value, _Missing):
            raise _Failed(value.error)
        if not ref.path:
            return value
        return self._field(value, ref.path, str(ref), None, None, "", run)

    async def _invoke(self, function: str, args: dict[str, Any], call_id: int,
                      parent_id: int | None, path: str, run: _Run) -> Any:
        request = effect_request(self.registry, function, args)
        if request is None:
            return await self._run_tool(function, args, call_id, parent_id, path, run)
        async with self.effects.guard():  # one side-effect call at a time
            if run.fatal is not None:
                self._admit(function, path, parent_id, run)  # skipped: the run stopped
            recorded = self.effects.get(request)
            if recorded is not None:
                return self._replay(recorded, "recorded", args, call_id, parent_id, path, run)
            decided = self.effects.decide(request)
            if decided is not None:
                source = "dry_run" if decided.outcome == "dry_run" else "refused"
                return self._replay(decided, source, args, call_id, parent_id, path, run)
            return await self._run_tool(function, args, call_id, parent_id, path, run,
                                        request)

    def _replay(self, recorded: Recorded, source: Any, args: dict[str, Any], call_id: int,
                parent_id: int | None, path: str, run: _Run) -> Any:
        """A side-effect call answered by the ledger, not run: only its CallFinished."""
        result = recorded.result
        run.emit(CallFinished(call_id, parent_id, result.function, args,
                              None if result.error else result.value, result.error, 0.0,
                              self._clock(), path, source=source))
        if result.error is None:
            return result.value
        return self._fail(result.function, call_id, path, result.error, False, run)

    async def _run_tool(self, function: str, args: dict[str, Any], call_id: int,
                        parent_id: int | None, path: str, run: _Run,
                        request: ToolCallRequest | None = None) -> Any:
        """Run the function now (a side-effect call's `request` records what happened)."""
        async with self._slot():
            timeout, budget_limited = self._admit(function, path, parent_id, run)
            run.emit(CallStarted(call_id, parent_id, function, args, self._clock(), path))
            started = self._clock()
            task = asyncio.ensure_future(self._ainvoke(function, args, timeout))
            run.in_flight.add(task)
            try:
                result = await task
            except asyncio.CancelledError:
                if request is not None:
                    self.effects.cancelled(request)
                if run.fatal is None or not task.cancelled():
                    raise  # cancelled from outside the run: not ours to swallow
                run.emit(CallCancelled(call_id, parent_id, function, run.fatal.message,
                                       self._clock() - started, self._clock(), path))
                raise _Failed(run.fatal) from None
            finally:
                run.in_flight.discard(task)
        seconds = self._clock() - started
        error = result.error or _serialisation_error(result.value)
        if request is not None:
            self.effects.record(Recorded(request, "ran", ToolResult(
                function, request.args, None if error else result.value, error, seconds)))
        run.emit(CallFinished(call_id, parent_id, function, args,
                              None if error else result.value, error, seconds,
                              self._clock(), path))
        if error is None:
            return result.value
        return self._fail(function, call_id, path, error, budget_limited, run)

    async def _ainvoke(self, function: str, args: dict[str, Any], timeout: float | None
                       ) -> ToolResult:
        guard = None if timeout is None else timeout + _GRACE
        try:
            return await asyncio.wait_for(
                self.registry.ainvoke(function, args, timeout=timeout), guard)
        except asyncio.TimeoutError:
            message = f"no result within {timeout:g} s"
            return ToolResult(function, args, error=ToolError("timeout", message))

    def _admit(self, function: str, path: str, parent_id: int | None, run: _Run
               ) -> tuple[float | None, bool]:
        """Take one call from the budget: (its timeout, whether the seconds budget is what
        limits that timeout). Stops the run when it has stopped or the budget is spent."""
        problem = run.fatal
        if problem is None:
            try:
                admitted = self.budget.take(self.policy.call_timeout)
            except BudgetSpent as spent:
                problem = RunError("budget", str(spent), function, None, path)
        if problem is not None:
            run.stop(problem)
            run.emit(CallSkipped(function, f"run stopped: {problem.message}", self._clock(),
                                 parent_id, path))
            raise _Failed(problem)
        run.calls += 1
        return admitted

    def _fail(self, function: str, call_id: int, path: str, error: ToolError,
              budget_limited: bool, run: _Run) -> Any:
        if budget_limited and error.kind == "timeout":
            failure = RunError("budget", f"budget of {self.policy.max_seconds:g} s exceeded "
                               f"while {function} ran", function, call_id, path, error)
            run.errors.append(failure)
            run.stop(failure)
            raise _Failed(failure)
        failure = RunError("tool", f"{function} failed ({error.kind}): {error.message}",
                           function, call_id, path, error)
        run.errors.append(failure)
        if self.policy.on_error == "stop":
            run.stop(failure)
        raise _Failed(failure)

    def _fit_strings(self, call: Call, args: dict[str, Any]) -> dict[str, Any]:
        """A computed value passed where a parameter takes strings and not the value's own
        type becomes its text (`grammar.types.passed_as_text`, SK's string context): what
        makes a result fit a string parameter, as the grammar and the plan check assume."""
        if call.function not in self.registry:
            return args
        parameters = self.registry.spec(call.function).parameters
        params = parameters.get("properties", {})
        for name, value in args.items():
            computed = isinstance(call.args.get(name), (Call, Ref))
            if computed and passed_as_text(params.get(name, {}), value, parameters):
                args[name] = as_text(value)
        return args

    def _has_param(self, function: str, name: str) -> bool:
        if function not in self.registry:
            return False
        return name in self.registry.spec(function).parameters.get("properties", {})

    def _slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._slots:
            self._slots[loop] = asyncio.Semaphore(self.policy.max_workers)
        return self._slots[loop]

    def _field(self, value: Any, path: FieldPath, what: str, function: str | None,
               call_id: int | None, where: str, run: _Run) -> Any:
        """The part of a result a field access names (`$1.total`, a call's `field`). A key
        the record lacks goes to `self.repair` (a field a plan named before it saw the
        record: `-> dict` declares no keys), whose choice is taken when it exists; else a
        missing part is a failure as data (a RunError of kind "reference", recorded in the
        run's errors and its trace; under error policy "stop" it ends the run), never a
        crash."""
        try:
            return follow(value, path)
        except FieldAccessError as exc:
            error = exc
        if self.repair is not None and isinstance(error, MissingKeyError):
            chosen = self.repair(value, path, what)
            if chosen is not None:
                with contextlib.suppress(FieldAccessError):
                    return follow(value, chosen)
        failure = RunError("reference", f"{what}: {error}", function, call_id, where)
        run.errors.append(failure)
        if self.policy.on_error == "stop":
            run.stop(failure)
        raise _Failed(failure)

    def _next_id(self) -> int:
        with self._id_lock:  # calls started early run on threads of their own
            self._ids += 1
            return self._ids


def _placed(event: Event, path: str, parent_id: int | None) -> Event:
    """An event of a call run early (as `run_call`'s "call"), placed at `path` under
    `parent_id`; a finished call's source says it ran early."""
    changes: dict[str, Any] = {}
    where = getattr(event, "path", None)
    if isinstance(where, str) and where.startswith(_EARLY_ROOT):
        changes["path"] = path + where[len(_EARLY_ROOT):]
    if hasattr(event, "parent_id") and event.parent_id is None:  # type: ignore[union-attr]
        changes["parent_id"] = parent_id
    if isinstance(event, CallFinished) and event.source == "tool":
        changes["source"] = "early"
    return replace(event, **changes) if changes else event  # type: ignore[type-var]


def _serialisation_error(value: Any) -> ToolError | None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return ToolError("unserializable", f"{type(value).__name__} is not JSON ({exc})")
    return None


def _run_sync(work: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    work.close()
    raise RuntimeError("an event loop is running here: await the async method instead")
