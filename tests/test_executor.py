"""The executor against the real registry: the invoice tree, concurrency shown by the trace
(never by wall-clock thresholds), timeouts, raising and unserialisable tools, budgets, the
error policy, and sequential piping of `input`."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from localagent.errors import BudgetExceededError, PlanValidationError, RuntimeFailure
from localagent.executor import ExecutionPolicy, ExecutionResult, Executor
from localagent.plan import Call, plan_from_dict
from localagent.tools.decorator import tool
from localagent.tools.registry import default_registry
from localagent.trace import (
    CallCancelled,
    CallFinished,
    CallSkipped,
    CallStarted,
    Event,
    RunFinished,
)

RELEASE = threading.Event()  # frees threads of "hanging" tools when the module's tests end


class Probe:
    """Test tools. `meet` only returns once `parties` calls are inside it at the same time,
    so a run that completes proves those calls overlapped (no clock involved)."""

    def __init__(self, parties: int = 4) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)
        self.arrived = 0
        self.parties = parties
        self.all_here: asyncio.Event | None = None
        self.calls = 0

    @tool
    def meet(self, tag: str) -> str:
        """Blocking: wait in a barrier until all parties are here."""
        self.calls += 1
        self.barrier.wait()
        return tag

    @tool
    async def ameet(self, tag: str) -> str:
        """Async: wait until all parties are here."""
        self.calls += 1
        if self.all_here is None:
            self.all_here = asyncio.Event()
        self.arrived += 1
        if self.arrived == self.parties:
            self.all_here.set()
        await asyncio.wait_for(self.all_here.wait(), 10)
        return tag

    @tool
    def nap(self, tag: str, seconds: float = 0.05) -> str:
        """Blocking sleep, then the tag."""
        self.calls += 1
        time.sleep(seconds)
        return tag

    @tool
    async def anap(self, tag: str, seconds: float = 0.05) -> str:
        """Async sleep, then the tag."""
        self.calls += 1
        await asyncio.sleep(seconds)
        return tag

    @tool
    def hang(self) -> str:
        """Blocks until the test module ends."""
        self.calls += 1
        RELEASE.wait(60)
        return "late"

    @tool
    def boom(self, message: str = "kaput") -> str:
        """Always raises."""
        self.calls += 1
        raise ValueError(message)

    @tool
    def opaque(self) -> Any:
        """Returns something with no JSON form."""
        self.calls += 1
        return threading.Lock()

    @tool
    def join(self, values: list[str]) -> str:
        """Join texts with '+'."""
        return "+".join(values)

    @tool
    def suffix(self, input: str, tail: str) -> str:
        """The input with `tail` appended."""
        return input + tail

    @tool
    def hello(self) -> str:
        """A constant, needs nothing."""
        return "hello"


@pytest.fixture(autouse=True, scope="module")
def _release_hung_threads() -> Iterator[None]:
    yield
    RELEASE.set()


def make(parties: int = 4, **policy: Any) -> tuple[Executor, Probe]:
    registry = default_registry(examples=True)
    probe = Probe(parties)
    registry.add_plugin(probe)
    return Executor(registry, ExecutionPolicy(**policy)), probe


def c(function: str, **args: Any) -> dict[str, Any]:
    return {"function": function, "args": args}


def of(events: Sequence[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def max_in_flight(events: Sequence[Event]) -> int:
    """The most calls that had started and not finished at any point of the trace."""
    live, most = 0, 0
    for event in events:
        if isinstance(event, CallStarted):
            live += 1
            most = max(most, live)
        elif isinstance(event, (CallFinished, CallCancelled)):
            live -= 1
    return most


def invoice(company: str) -> dict[str, Any]:
    return c("DemoPlugin.GetInvoice", company=company)


# --- trees ----------------------------------------------------------------------------------


def test_invoice_tree_with_the_real_example_plugin() -> None:
    executor, _ = make()
    plan = plan_from_dict(c(
        "DemoPlugin.Diff",
        value1=c("DemoPlugin.Total", value1=invoice("C"), value2=invoice("F")),
        value2=c("DemoPlugin.Total", value1=invoice("A"), value2=invoice("E")),
    ))
    seen: list[Event] = []
    result = executor.run_tree_sync(plan, on_event=seen.append)
    assert result.ok and result.value == 21100
    assert result.calls == 7
    assert list(result.events) == seen
    assert isinstance(seen[-1], RunFinished) and seen[-1].result == 21100
    finished = {e.call_id: e for e in of(seen, CallFinished)}
    root = next(e for e in finished.values() if e.parent_id is None)
    assert root.function == "DemoPlugin.Diff" and root.args == {"value1": 24100, "value2": 3000}
    totals = [e for e in finished.values() if e.parent_id == root.call_id]
    assert sorted(e.result for e in totals) == [3000, 24100]
    leaves = [e for e in finished.values() if e.function == "DemoPlugin.GetInvoice"]
    assert {e.parent_id for e in leaves} == {e.call_id for e in totals}
    # bottom-up: every call finishes before its parent starts
    start_index = {e.call_id: i for i, e in enumerate(seen) if isinstance(e, CallStarted)}
    for i, event in enumerate(seen):
        if isinstance(event, CallFinished) and event.parent_id is not None:
            assert i < start_index[event.parent_id]
    json.dumps(result.to_dict())  # the whole trace is JSON


@pytest.mark.parametrize("tool_name", ["Probe.meet", "Probe.ameet"])
def test_independent_calls_overlap(tool_name: str) -> None:
    executor, _probe = make(parties=4)
    plan = plan_from_dict(c(
        "Probe.join", values=[c(tool_name, tag=t) for t in "abcd"]))
    result = executor.run_tree_sync(plan)
    assert result.ok, result.error
    assert result.value == "a+b+c+d"
    leaves = [e for e in result.events if getattr(e, "function", "") == tool_name]
    # all four started before any finished: they ran at the same time
    assert [type(e) for e in leaves] == [CallStarted] * 4 + [CallFinished] * 4
    assert max_in_flight(result.events) == 4


def test_worker_bound_limits_calls_in_flight() -> None:
    executor, _ = make(max_workers=2)
    plan = plan_from_dict(c("Probe.join", values=[c("Probe.nap", tag=t) for t in "abcdef"]))
    result = executor.run_tree_sync(plan)
    assert result.value == "a+b+c+d+e+f"
    assert max_in_flight(result.events) == 2


def test_invalid_plan_is_rejected_before_anything_runs() -> None:
    executor, probe = make()
    plan = plan_from_dict(c("Probe.join", values=[c("Probe.nap", tag="a"), c("Probe.nop")]))
    with pytest.raises(PlanValidationError, match=r"root.args.values\[1\]: unknown function"):
        executor.run_tree_sync(plan)
    assert probe.calls == 0


# --- failures are data ----------------------------------------------------------------------


def test_timeout_is_reported_and_the_run_ends_cleanly() -> None:
    executor, _ = make(call_timeout=0.2)
    result = executor.run_call_sync(Call(function="Probe.hang"))
    assert not result.ok and result.value is None
    (finished,) = of(result.events, CallFinished)
    assert finished.error is not None and finished.error.kind == "timeout"
    assert result.error is not None and result.error.kind == "tool"
    assert "timeout" in result.error.message
    with pytest.raises(RuntimeFailure):
        result.unwrap()


def test_raising_tool_is_reported() -> None:
    executor, _ = make()
    plan = plan_from_dict(c("TextPlugin.uppercase", input=c("Probe.boom", message="no luck")))
    result = executor.run_tree_sync(plan)
    assert not result.ok
    failed = of(result.events, CallFinished)[0]
    assert failed.function == "Probe.boom" and failed.error.kind == "exception"
    assert "ValueError: no luck" in failed.error.message
    (skipped,) = of(result.events, CallSkipped)
    assert skipped.function == "TextPlugin.uppercase"
    assert result.error is not None and "no luck" in result.error.message
    assert result.error.path == "root.args.input"


def test_unserialisable_result_is_reported() -> None:
    executor, _ = make()
    result = executor.run_call_sync(Call(function="Probe.opaque"))
    (finished,) = of(result.events, CallFinished)
    assert finished.error is not None and finished.error.kind == "unserializable"
    assert finished.result is None
    json.dumps(result.to_dict())


def test_budget_of_calls_stops_the_run() -> None:
    executor, _ = make(max_calls=3)
    plan = plan_from_dict(c(
        "DemoPlugin.Diff",
        value1=c("DemoPlugin.Total", value1=invoice("C"), value2=invoice("F")),
        value2=c("DemoPlugin.Total", value1=invoice("A"), value2=invoice("E")),
    ))
    result = executor.run_tree_sync(plan)
    assert result.error is not None and result.error.kind == "budget"
    assert result.error.message == "budget of 3 calls exceeded"
    assert result.calls == 3 and len(of(result.events, CallStarted)) == 3
    assert of(result.events, CallSkipped)
    with pytest.raises(BudgetExceededError):
        result.unwrap()
    # the budget covers the executor's lifetime (a ReAct loop shares it) until reset
    assert executor.run_call_sync(Call(function="Probe.hello")).error.kind == "budget"
    executor.reset_budget()
    assert executor.run_call_sync(Call(function="Probe.hello")).value == "hello"


def test_budget_of_seconds_stops_a_hanging_call() -> None:
    executor, _ = make(call_timeout=30, max_seconds=0.3)
    result = executor.run_call_sync(Call(function="Probe.hang"))
    assert result.error is not None and result.error.kind == "budget"
    assert "budget of 0.3 s exceeded" in result.error.message


BRANCHES = c(
    "Probe.join",
    values=[c("TextPlugin.uppercase", input=c("Probe.boom")),
            c("Probe.anap", tag="slow", seconds=0.5)],
)


def test_error_policy_continue_finishes_independent_branches() -> None:
    executor, _ = make(on_error="continue")
    result = executor.run_tree_sync(plan_from_dict(BRANCHES))
    assert not result.ok and "kaput" in result.error.message
    done = {e.function: e for e in of(result.events, CallFinished)}
    assert done["Probe.anap"].ok and done["Probe.anap"].result == "slow"
    assert {e.function for e in of(result.events, CallSkipped)} == {
        "TextPlugin.uppercase", "Probe.join"}
    assert len(result.errors) == 1


def test_error_policy_stop_cancels_the_sibling_in_flight() -> None:
    executor, _ = make(on_error="stop")
    result = executor.run_tree_sync(plan_from_dict(BRANCHES))
    assert not result.ok and "kaput" in result.error.message
    (cancelled,) = of(result.events, CallCancelled)
    assert cancelled.function == "Probe.anap"
    assert not [e for e in of(result.events, CallFinished) if e.function == "Probe.anap"]


# --- sequential plans -----------------------------------------------------------------------


def test_sequential_pipes_input_and_keeps_named_results() -> None:
    executor, _ = make()
    plan = plan_from_dict({
        "input": "hello",
        "subtasks": [
            c("TextPlugin.uppercase"),                       # input <- plan input
            {**c("Probe.suffix", tail="!"), "output": "loud"},  # input <- HELLO
            c("Probe.hello"),                                # no input parameter
            c("Probe.suffix", tail="?"),                      # input <- "hello" (step 3)
            c("Probe.join", values=["$loud", "#E4", "$1"]),
        ],
    })
    result = executor.run_sequential_sync(plan)
    assert result.ok, result.error
    assert result.value == "HELLO!+hello?+HELLO"
    args = [e.args for e in of(result.events, CallStarted)]
    assert args[0] == {"input": "hello"}
    assert args[1] == {"input": "HELLO", "tail": "!"}
    assert args[3] == {"input": "hello", "tail": "?"}


def test_step_that_sets_input_is_not_overridden_and_numbers_become_text() -> None:
    executor, _ = make()
    plan = plan_from_dict({"input": "ignored", "subtasks": [
        invoice("C"), c("TextPlugin.uppercase", input="$input"),
        c("Probe.suffix", input="x", tail="$2")]})
    result = executor.run_sequential_sync(plan)
    assert result.value == "x20000"
    assert of(result.events, CallStarted)[1].args == {"input": "20000"}


def test_sequential_continue_runs_steps_that_do_not_need_the_failure() -> None:
    plan = plan_from_dict({"input": "", "subtasks": [
        c("Probe.boom"), c("TextPlugin.uppercase"), c("Probe.hello")]})
    executor, _ = make(on_error="continue")
    result = executor.run_sequential_sync(plan)
    assert result.ok and result.value == "hello"
    assert [e.function for e in of(result.events, CallSkipped)] == ["TextPlugin.uppercase"]
    assert len(result.errors) == 1

    executor, _ = make(on_error="stop")
    result = executor.run_sequential_sync(plan)
    assert not result.ok and "kaput" in result.error.message
    assert [e.function for e in of(result.events, CallStarted)] == ["Probe.boom"]


# --- steps for ReAct / tool-calling loops ----------------------------------------------------


def test_run_calls_runs_a_batch_concurrently_and_failures_stay_separate() -> None:
    executor, _ = make(parties=3)
    calls = [Call(function="Probe.meet", args={"tag": t}) for t in "xyz"]
    calls.append(Call(function="DemoPlugin.Totl"))
    results: tuple[ExecutionResult, ...] = executor.run_calls_sync(calls)
    assert [r.value for r in results[:3]] == ["x", "y", "z"]
    assert results[3].error is not None and "unknown_function" in results[3].error.message


def test_run_call_resolves_references_from_a_context() -> None:
    executor, _ = make()
    call = Call.model_validate(
        {"function": "DemoPlugin.Total", "args": {"value1": {"kind": "ref", "name": "seen"},
                                                    "value2": 5}})
    assert executor.run_call_sync(call, context={"seen": 10}).value == 15
    missing = executor.run_call_sync(call)
    assert missing.error is not None and missing.error.kind == "reference"


async def _inside_a_loop(executor: Executor) -> Any:
    with pytest.raises(RuntimeError, match="await"):
        executor.run_call_sync(Call(function="Probe.hello"))
    return (await executor.run_call(Call(function="Probe.hello"))).value


def test_async_api_and_sync_wrapper_inside_a_loop() -> None:
    executor, _ = make()
    assert asyncio.run(_inside_a_loop(executor)) == "hello"


def test_policy_rejects_impossible_limits() -> None:
    from localagent.errors import UsageError

    with pytest.raises(UsageError, match="max_workers, call_timeout must be positive"):
        ExecutionPolicy(max_workers=0, call_timeout=0)
