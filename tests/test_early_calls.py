"""Streamed execution (early_calls.py): calls start while their plan is generated.

A scripted model writes the plan a few characters at a time, calling the give-up criterion
after each (as llama.cpp does after each token); at chosen points it waits until a tool has
been entered, which only happens if that call started before the plan was finished. The
waits are generous and only guard against hanging: no test asserts a duration.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from localagent.constraint import Constraint
from localagent.early_calls import EarlyCalls
from localagent.executor import ExecutionPolicy, Executor
from localagent.llm import ScriptedLLM
from localagent.llm.base import Completion, GiveUp, Usage
from localagent.plan import plan_from_dict
from localagent.planners.base import GenerationLog, PlannerEvent, PlannerSettings
from localagent.planners.plan_runner import plan_and_execute
from localagent.planners.sequential import SequentialPlanner
from localagent.planners.techniques import Techniques
from localagent.planners.tree import TreePlanner
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry
from localagent.trace import CallFinished, CallStarted

WAIT = 10.0  # seconds; only a guard against hanging


class Chains:
    """Read-only steps that record their entry, and one function with side effects."""

    def __init__(self) -> None:
        self.entered: dict[str, threading.Event] = {}
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def _enter(self, tag: str) -> None:
        with self._lock:
            self.calls.append(tag)
            self.entered.setdefault(tag, threading.Event()).set()

    def event(self, tag: str) -> threading.Event:
        with self._lock:
            return self.entered.setdefault(tag, threading.Event())

    @tool
    def double(self, x: float) -> float:
        """Twice x."""
        self._enter(f"double({x:g})")
        return 2 * x

    @tool
    def inc(self, x: float) -> float:
        """x plus one."""
        self._enter(f"inc({x:g})")
        return x + 1

    @tool
    def add(self, a: float, b: float) -> float:
        """a plus b."""
        self._enter(f"add({a:g},{b:g})")
        return a + b

    @tool
    def shout(self, input: str) -> str:
        """The input, louder."""
        self._enter(f"shout({input})")
        return input.upper() + "!"

    @tool(side_effects=True)
    def save(self, x: float) -> float:
        """Store x."""
        self._enter(f"save({x:g})")
        return x


class DrippingLLM(ScriptedLLM):
    """Writes each scripted output a few characters at a time, showing the criterion every
    prefix; after a prefix that ends with a key of `wait_after`, waits for that event."""

    def __init__(self, outputs: Sequence[str], wait_after: dict[str, threading.Event],
                 wait: float = WAIT):
        super().__init__(list(outputs))
        self.wait_after, self.wait = wait_after, wait
        self.waited: dict[str, bool] = {}

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: Sequence[str] = (),
                 temperature: float | None = None, seed: int | None = None,
                 constraint: Constraint | None = None,
                 give_up: GiveUp | None = None) -> Completion:
        full = super().complete(prompt, max_tokens=max_tokens, stop=stop,
                                temperature=temperature, seed=seed, constraint=constraint)
        for n in range(1, len(full.text) + 1):
            if give_up is not None and give_up(full.text[:n]):
                break
            for marker, event in self.wait_after.items():
                if full.text[:n].endswith(marker) and marker not in self.waited:
                    self.waited[marker] = event.wait(self.wait)
        return Completion(text=full.text, usage=Usage(calls=1), finish_reason="stop",
                          prompt=prompt)


def text(plan: dict[str, Any]) -> str:
    return json.dumps(plan, separators=(",", ":"))


def call(function: str, **args: Any) -> dict[str, Any]:
    return {"function": f"Chains.{function}", "args": args}


# add(inc(double(1)), inc(double(2))): two independent chains of two calls under a root
TREE = text(call("add", a=call("inc", x=call("double", x=1)),
                 b=call("inc", x=call("double", x=2))))
FIRST_CHAIN_END = text(call("inc", x=call("double", x=1)))


def run(planner_cls: type, outputs: list[str], waits: dict[str, str], *,
        stream: bool = True, chains: Chains | None = None, wait: float = WAIT):
    chains = chains or Chains()
    registry = ToolRegistry()
    specs = registry.add_plugin(chains)
    llm = DrippingLLM(outputs, {m: chains.event(tag) for m, tag in waits.items()}, wait)
    planner = planner_cls(llm, specs, PlannerSettings(techniques=Techniques.parse("plain")))
    events: list[Any] = []
    policy = ExecutionPolicy(stream=stream)
    result = plan_and_execute(planner, "goal", lambda: Executor(registry, policy),
                              GenerationLog(), on_event=events.append)
    return result, llm, chains, events


def test_tree_calls_start_while_the_plan_is_written() -> None:
    # the second chain is written only once the first chain's outer call has run
    result, llm, chains, events = run(TreePlanner, [TREE], {FIRST_CHAIN_END: "inc(2)"})
    assert llm.waited == {FIRST_CHAIN_END: True}
    assert result.chosen is not None and result.chosen.result.value == 8  # 3 + 5
    # each call ran once (the root too started as soon as its text closed)
    assert sorted(chains.calls) == sorted(["double(1)", "inc(2)", "double(2)", "inc(4)",
                                           "add(3,5)"])
    assert [e.source for e in events if isinstance(e, CallFinished)] == ["early"] * 5
    # the trace places them where they sit in the plan
    paths = {e.path for e in events if isinstance(e, CallStarted)}
    assert {"root.args.a", "root.args.a.args.x", "root.args.b.args.x"} <= paths
    assert not [e for e in events if isinstance(e, PlannerEvent)
                and e.kind == "early_calls_discarded"]


def test_without_streaming_nothing_starts_before_the_plan_is_complete() -> None:
    chains = Chains()
    result, llm, _, events = run(TreePlanner, [TREE], {FIRST_CHAIN_END: "inc(2)"},
                                 stream=False, chains=chains, wait=1.0)
    assert llm.waited == {FIRST_CHAIN_END: False}  # waited in vain: nothing had started
    assert result.chosen is not None and result.chosen.result.value == 8
    assert {e.source for e in events if isinstance(e, CallFinished)} == {"tool"}


def test_side_effect_calls_wait_for_the_whole_plan() -> None:
    plan = text(call("save", x=call("double", x=4)))
    _, llm, _, events = run(TreePlanner, [plan], {text(call("double", x=4)): "double(4)"})
    assert llm.waited[text(call("double", x=4))] is True  # the read-only call started early
    finished = {e.function: e.source for e in events if isinstance(e, CallFinished)}
    # refused (no approver), but only once the plan ran: never started early
    assert finished == {"Chains.double": "early", "Chains.save": "refused"}


def test_a_rejected_plan_discards_what_started_early_and_the_trace_says_so() -> None:
    bad = text(call("add", a=call("double", x=1), c=5))  # "c" is no parameter of add
    good = text(call("double", x=3))
    result, llm, _, events = run(TreePlanner, [bad, bad, bad, good],
                                      {text(call("double", x=1)): "double(1)"})
    assert llm.waited[text(call("double", x=1))] is True
    assert result.chosen is None or result.chosen.result.value == 6
    discarded = [e for e in events if isinstance(e, PlannerEvent)
                 and e.kind == "early_calls_discarded"]
    # the whole bad call had closed too (read-only; its arguments fail in the registry)
    assert discarded and discarded[0].detail["functions"] == ["Chains.double", "Chains.add"]
    assert discarded[0].detail["reason"] == "the plan was rejected"


def test_sequential_steps_start_once_the_steps_they_read_started() -> None:
    plan = text({"input": "", "subtasks": [
        call("double", x=1), call("inc", x="$1"), call("double", x=2), call("inc", x="$3"),
        call("add", a="$2", b="$4")]})
    marker = text(call("inc", x="$1"))
    result, llm, chains, events = run(SequentialPlanner, [plan], {marker: "inc(2)"})
    assert llm.waited == {marker: True}
    assert result.chosen is not None and result.chosen.result.value == 8
    assert sorted(chains.calls) == sorted(["double(1)", "inc(2)", "double(2)", "inc(4)",
                                           "add(3,5)"])
    sources = [e.source for e in events if isinstance(e, CallFinished)]
    assert sources == ["early"] * 5
    assert [e.path for e in events if isinstance(e, CallStarted)] == [
        f"subtasks[{i}]" for i in range(5)]


def test_a_step_reading_the_plans_own_input_waits_for_the_plan() -> None:
    # both steps take `input` piped in: the first the plan's, the second the first's
    plan = text({"input": "hi", "subtasks": [call("shout"), call("shout")]})
    result, _, _, events = run(SequentialPlanner, [plan], {})
    assert result.chosen is not None and result.chosen.result.value == "HI!!"
    assert [e.source for e in events if isinstance(e, CallFinished)] == ["tool", "tool"]


def test_watch_survives_any_text() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Chains())
    early = EarlyCalls(Executor(registry), "tree")
    for junk in ['{"a": "}{', '{"function": 3, "args": {}}', '}}}{{{', "",
                 '{"function": "Nope.f", "args": {}}', '{"function": "Chains.inc"}']:
        assert early.watch(junk) is False
    assert early.started == 0
    assert early.finish(None, "test") == []


@pytest.mark.parametrize("stream", [True, False])
def test_the_plan_runs_the_same_either_way(stream: bool) -> None:
    result, *_ = run(TreePlanner, [TREE], {}, stream=stream)
    assert result.chosen is not None
    assert result.chosen.plan == plan_from_dict(json.loads(TREE))
    assert result.chosen.result.value == 8


# --- the real default model ------------------------------------------------------------

def test_real_model_streams_the_sequential_plan_with_the_same_outcome(default_llm) -> None:
    """The 1.5B's sequential plan for two chains (two countries, then their populations,
    then the sum) runs with calls started while it is written: the same plan, the same
    answer as without streaming, and at least the first step taken from its early run."""
    from localagent.agent import Agent
    from localagent.bench.streaming import ANSWER, GOAL, SlowAtlas

    outcomes = {}
    for stream in (False, True):
        registry = ToolRegistry()
        registry.add_plugin(SlowAtlas(delay=0.2))
        agent = Agent(default_llm, registry=registry, policy=ExecutionPolicy(stream=stream))
        result = agent.run(GOAL, planner="sequential")
        sources = [s["source"] for s in result.steps if s["kind"] == "call_finished"]
        outcomes[stream] = (result.plan, result.answer, sources)
    assert outcomes[True][:2] == outcomes[False][:2]
    assert outcomes[True][1] == ANSWER
    assert set(outcomes[False][2]) == {"tool"}
    assert outcomes[True][2][0] == "early"
