"""Calls that start while the plan is still being written (streamed execution).

Why: a plan's first calls are often complete long before the plan is. LLMCompiler starts
them while the planner writes on; so does this. `EarlyCalls.watch` is handed to the
generation as its give-up criterion (it never gives up): it sees the plan text after every
token, and each call object that closes in it is started at once on its own thread,
through the executor that will run the plan.

What starts early, and what never does:
- tree plans: a call whose whole subtree is read-only functions of the registry, with no
  references; a call over nested calls started early waits for them, then runs.
- sequential plans: a step whose references (`$k`, a named output, `$input` whether written
  or piped in by the executor) all name steps already started early.
- never a function with side effects: those wait for the whole plan to parse and for
  approval, as the executor runs them.

The executor, running the finished plan, takes a started call's result instead of running
it again (`Executor._eval_call`, `Executor._steps`), with its trace events (CallFinished
`source="early"`). What was started and never taken (the plan was rejected, re-planned,
or ended differently) is discarded: `finish` reports it as a planner event
("early_calls_discarded"); the calls were read-only, so nothing else is undone.
Replayed generations (benchmarks) call no criterion, so nothing starts early there.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from localagent.errors import PlanValidationError
from localagent.plan import INPUT, Call, call_from_dict

if TYPE_CHECKING:
    from localagent.execution import ExecutionResult
    from localagent.executor import Executor

__all__ = ["EarlyCalls", "call_key"]

PlanKind = Literal["tree", "sequential"]
_log = logging.getLogger(__name__)


def call_key(call: Call) -> str:
    """One text per distinct call subtree; a nested call's key is a substring of its
    parent's (sorted keys, no spaces)."""
    return json.dumps(call.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


@dataclass
class _Started:
    key: str
    function: str
    future: Future[ExecutionResult]
    taken: bool = False  # by the run of the finished plan


@dataclass
class _Scan:
    """Where the brace scan of the plan text stands (texts grow token by token)."""

    text: str = ""
    stack: list[int] = field(default_factory=list)  # offsets of the open braces
    in_string: bool = False
    escaped: bool = False


class EarlyCalls:
    """Starts the calls of a plan being generated (see module docstring). One per plan."""

    def __init__(self, executor: Executor, kind: PlanKind) -> None:
        self.executor, self.kind = executor, kind
        self._scan = _Scan()
        self._lock = threading.Lock()
        self._started: dict[str, _Started] = {}  # tree calls by key; steps by "#i key"
        self._steps: list[_Started | None] = []  # sequential: per step, started or not
        self._outputs: dict[str, int] = {}  # sequential: named output -> step index
        self._local = threading.local()  # the key the current worker thread computes

    # --- while the plan is generated --------------------------------------------------

    def watch(self, text: str) -> bool:
        """A give-up criterion that never gives up: start what `text` completes."""
        for start, end, depth in self._closed(text):
            try:  # per object: the scan goes on whatever one object does
                self._consider(text[start:end], depth)
            except Exception:  # noqa: BLE001 - never disturb generation; the plan runs anyway
                _log.debug("early calls: an object not read", exc_info=True)
        return False

    def _closed(self, text: str) -> Iterator[tuple[int, int, int]]:
        """(start, end, depth) of each JSON object closed since the last text seen."""
        scan = self._scan
        if not text.startswith(scan.text):  # a new generation (a retry): start afresh
            scan = self._scan = _Scan()
        begin = len(scan.text)
        scan.text = text
        for i in range(begin, len(text)):
            ch = text[i]
            if scan.in_string:
                if scan.escaped:
                    scan.escaped = False
                elif ch == "\\":
                    scan.escaped = True
                elif ch == '"':
                    scan.in_string = False
            elif ch == '"':
                scan.in_string = True
            elif ch == "{":
                scan.stack.append(i)
            elif ch == "}" and scan.stack:
                start = scan.stack.pop()
                yield start, i + 1, len(scan.stack)

    def _consider(self, body: str, depth: int) -> None:
        try:
            raw = json.loads(body)
        except ValueError:
            return
        if not (isinstance(raw, dict) and isinstance(raw.get("function"), str)
                and isinstance(raw.get("args"), dict)):
            return
        if self.kind == "sequential":
            if depth == 1:  # a step of "subtasks"
                self._step(raw)
            return
        try:
            call = call_from_dict(raw)
        except PlanValidationError:
            return
        if not any(True for _ in call.refs()) and self._read_only(call):
            self._start(call_key(call), call, None)

    def _step(self, raw: dict[str, Any]) -> None:
        index = len(self._steps)
        output = raw.get("output")
        if isinstance(output, str):
            self._outputs[output] = index
        self._steps.append(None)
        try:
            call = self.executor.step_call(call_from_dict(
                {k: v for k, v in raw.items() if k != "output"}, f"subtasks[{index}]"))
        except PlanValidationError:
            return
        needs = self._needs(call, index)
        if needs is None or not self._read_only(call):
            return
        self._steps[index] = self._start(f"#{index} {call_key(call)}", call, needs)

    def _needs(self, call: Call, index: int) -> dict[str, int] | None:
        """Context name -> step index for each reference of step `index`; None when one
        names a step not started early (or the plan's own input)."""
        needs: dict[str, int] = {}
        for _, ref in call.refs():
            if ref.step is not None:
                source = ref.step - 1
            elif ref.name == INPUT:
                source = index - 1
            else:
                source = self._outputs.get(ref.name, index)
            if not 0 <= source < index or self._steps[source] is None:
                return None
            needs[ref.name] = source
        return needs

    def _read_only(self, call: Call) -> bool:
        registry = self.executor.registry
        if call.function not in registry or registry.spec(call.function).side_effects:
            return False
        return all(self._read_only(child) for _, child in call.children())

    def _start(self, key: str, call: Call, needs: dict[str, int] | None) -> _Started | None:
        with self._lock:
            if key in self._started:
                return self._started[key]
            started = _Started(key, call.function, Future())
            self._started[key] = started
        threading.Thread(target=self._work, args=(started, call, needs), daemon=True,
                         name=f"early {call.function}").start()
        return started

    def _work(self, started: _Started, call: Call, needs: dict[str, int] | None) -> None:
        self._local.key = started.key
        try:
            context: dict[str, Any] = {}
            for name, index in (needs or {}).items():
                source = self._steps[index]
                assert source is not None
                result = source.future.result()
                if not result.ok:
                    started.future.set_result(result)
                    return
                context[name] = result.value
            started.future.set_result(self.executor.run_call_sync(call, context=context))
        except BaseException as exc:  # noqa: BLE001 - the run of the plan sees it
            started.future.set_exception(exc)

    # --- while the finished plan runs ---------------------------------------------------

    def result_for(self, call: Call, step: int | None = None) -> Future[ExecutionResult] | None:
        """The started run of `call` (of step `step` of a sequential plan), marked taken;
        None when it was not started early (or is the very call this thread computes)."""
        if not self._started:  # nothing started: no key to compute (every call asks)
            return None
        key = call_key(call) if step is None else f"#{step} {call_key(call)}"
        if key == getattr(self._local, "key", None):
            return None
        with self._lock:
            started = self._started.get(key)
        if started is None:
            return None
        if getattr(self._local, "key", None) is None:
            started.taken = True
        return started.future

    def finish(self, on_event: Callable[[Any], None] | None, reason: str) -> list[str]:
        """The functions of the calls started early and not used by the finished plan's
        run (one event says so); call once, after the run or when the plan was rejected."""
        from localagent.planners.base import PlannerEvent

        with self._lock:
            started = list(self._started.values())
        used = [s.key.split(" ", 1)[-1] for s in started if s.taken]
        discarded = [s.function for s in started
                     if not s.taken and not any(s.key.split(" ", 1)[-1] in u for u in used)]
        if discarded and on_event is not None:
            on_event(PlannerEvent("early_calls_discarded",
                                  {"functions": discarded, "reason": reason},
                                  time.monotonic()))
        return discarded

    @property
    def started(self) -> int:
        return len(self._started)
