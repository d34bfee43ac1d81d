"""Trace events: what happened during a run, as small frozen records.

Why plain records with a `kind` literal: the CLI renders them live (`on_event`), `--json`
dumps them, benchmarks measure overlap from them, and tests assert on their order; none of
these should need the executor's internals. Planners add their own kinds (PlanCreated,
LLMCall...) to `Event` later; everything here only relies on `kind`, `at` and `to_dict()`.

`at` is a `time.monotonic()` reading: comparable across events of one process, meaningless
as a date. Renderers show it relative to the first event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from localagent.tools.spec import ToolError


@dataclass(frozen=True)
class CallStarted:
    """A call's arguments are known (nested calls done, references resolved) and it runs."""

    call_id: int
    parent_id: int | None  # the call whose argument this call computes; None at the top
    function: str
    args: dict[str, Any]
    at: float
    path: str = ""  # where the call sits in the plan: "root.args.value1", "subtasks[2]"
    kind: Literal["call_started"] = field(default="call_started", init=False)

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)


Source = Literal["tool", "early", "recorded", "dry_run", "refused"]
"""Where a call's outcome came from: "tool", the function ran now; "early", it ran while
the plan was still being generated (`early_calls.py`) and the plan's run took its result;
"recorded", a side-effect call that already ran in this run, answered from the run's
ledger without running again; "dry_run", a side-effect call not run (a placeholder value);
"refused", a side-effect call not approved (the error has kind "refused")."""


@dataclass(frozen=True)
class CallFinished:
    """A call ended: with `result`, or with `error` (raised, timed out, unserialisable,
    invalid arguments, cancelled because a sibling failed, refused).

    `source` says where the outcome came from (`Source`); `from_tool` is True when `result`
    is a function's own output. Such content is untrusted data: a web page, a document or an
    email may say anything, "ignore your instructions" included, and the model reads it.
    """

    call_id: int
    parent_id: int | None
    function: str
    args: dict[str, Any]
    result: Any
    error: ToolError | None
    seconds: float
    at: float
    path: str = ""
    source: Source = "tool"
    kind: Literal["call_finished"] = field(default="call_finished", init=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def started_at(self) -> float:
        return self.at - self.seconds

    @property
    def from_tool(self) -> bool:
        """Whether the outcome (`result`, or an exception's message) came from running the
        function, now or earlier in the run: content to treat as data, never as orders."""
        return self.source in ("tool", "early", "recorded")

    def to_dict(self) -> dict[str, Any]:
        return {**_plain(self), "from_tool": self.from_tool}


@dataclass(frozen=True)
class CallCancelled:
    """A started call abandoned before it finished: the run stopped (a sibling failed under
    error policy "stop", or the budget of seconds ran out). A sync tool's thread cannot be
    killed; it is left to finish on its own and its result is ignored."""

    call_id: int
    parent_id: int | None
    function: str
    reason: str
    seconds: float
    at: float
    path: str = ""
    kind: Literal["call_cancelled"] = field(default="call_cancelled", init=False)

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class CallSkipped:
    """A call that never ran: an argument it needs comes from a call that failed (error
    policy "continue"), or the run stopped before it."""

    function: str
    reason: str
    at: float
    parent_id: int | None = None
    path: str = ""
    kind: Literal["call_skipped"] = field(default="call_skipped", init=False)

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class RunFinished:
    """The end of one executor run (a plan, a call or a batch of calls)."""

    ok: bool
    result: Any
    error: str | None
    calls: int
    seconds: float
    at: float
    kind: Literal["run_finished"] = field(default="run_finished", init=False)

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)


Event = CallStarted | CallFinished | CallCancelled | CallSkipped | RunFinished
"""Every event kind; planners extend this union with their own records."""


def _plain(event: Any) -> dict[str, Any]:
    data = {f.name: getattr(event, f.name) for f in fields(event)}
    for key in ("args", "result"):
        if key in data:
            data[key] = _jsonable(data[key])
    if isinstance(data.get("error"), ToolError):
        data["error"] = error_dict(data["error"])
    return data


def error_dict(error: ToolError) -> dict[str, str]:
    """A ToolError as JSON (its exception object, if any, stays behind)."""
    return {"kind": error.kind, "message": error.message}


def _jsonable(value: Any) -> Any:
    """Trace data must always dump; a value that cannot is shown by its repr."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
    return value


def describe(event: Any, start: float = 0.0, depth: int = 0) -> str:
    """One readable line for the CLI's trace view (`start`: the first event's `at`)."""
    clock = f"{event.at - start:7.2f}s"
    pad = "  " * depth
    if isinstance(event, CallStarted):
        return f"{clock} {pad}> #{event.call_id} {event.function}({_args(event.args)})"
    if isinstance(event, CallFinished):
        outcome = (f"= {_short(event.result)}" if event.error is None
                   else f"! {event.error.kind}: {event.error.message}")
        note = _SOURCE_NOTES.get(event.source, event.source)
        return (f"{clock} {pad}< #{event.call_id} {event.function} {outcome} "
                f"({note or f'{event.seconds:.2f}s'})")
    if isinstance(event, CallCancelled):
        return f"{clock} {pad}x #{event.call_id} {event.function} cancelled: {event.reason}"
    if isinstance(event, CallSkipped):
        return f"{clock} {pad}- {event.function} skipped: {event.reason}"
    if isinstance(event, RunFinished):
        outcome = "finished" if event.ok else f"failed: {event.error}"
        return f"{clock} run {outcome} ({event.calls} calls, {event.seconds:.2f}s)"
    kind, detail = getattr(event, "kind", type(event).__name__), getattr(event, "detail", None)
    if kind == "answer_typed" and isinstance(detail, dict):
        how = (f"{detail.get('tokens')} tokens" if detail.get("generated")
               else "the result as it was")
        return f"{clock} {pad}answer written as {detail.get('type')} ({how})"
    if kind == "field_repaired" and isinstance(detail, dict):
        return (f"{clock} {pad}{detail.get('access')}: no such field; took "
                f"{detail.get('took') or 'none'}")
    return f"{clock} {pad}{kind}"


_SOURCE_NOTES: dict[str, str] = {"tool": "", "early": "",  # timed as it ran
                                 "recorded": "reused: already ran in this run",
                                 "dry_run": "dry run",
                                 "refused": "not executed"}


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in args.items())


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(_jsonable(value), ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
