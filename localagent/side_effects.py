"""Side-effect calls: the approval question and the per-run ledger that runs each at most once.

A function declared with side effects (`@tool(side_effects=True)`, `schema_tool(...,
side_effects=True)`) changes something outside the run: it sends, writes, pays, deletes.
The planners retry, re-plan, vote and loop, and each of those may ask for the same call
again. Why one ledger per run, shared by every executor of that run (`Agent.run` makes
it): the question "did this call already happen?" is about the run, not about one plan.

Contract, for one ledger:
- A distinct call is its function plus its validated arguments as canonical JSON
  (`ToolCallRequest.key`: keys sorted, so `{"a": 1, "b": 2}` and `{"b": 2, "a": 1}` are
  one call; arguments are compared after the schema's coercion, so `"3"` and `3` for an
  integer are one call too).
- The first time a distinct call comes up, `approve(request)` is asked (never in a dry
  run); approved, it runs once; refused, it is recorded as refused. Any later request for
  the same call gets what was recorded, without running or asking again: the recorded
  value or error (the trace marks it `source="recorded"`), or the same refusal.
- With no approver, every side-effect call is refused: approval is opt-in, for the API as
  for the CLI (`--yes`).
- In a dry run nothing with side effects runs: each call gets `placeholder(function)` as
  its value (`source="dry_run"` in the trace); read-only calls run as usual.
- A call that was started and then cancelled (the run stopped while it ran) may still
  have had its effect (a thread cannot be killed), so it is recorded and never run again.

The approver is called on the executor's own thread, one side-effect call at a time, and
blocks that run until it answers (a terminal prompt waits for the person); the time spent
waiting counts against the run's budget of seconds.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from localagent.errors import LocalAgentError
from localagent.tools.spec import ToolError, ToolResult

if TYPE_CHECKING:
    from localagent.tools.registry import ToolRegistry

Outcome = Literal["ran", "refused", "dry_run", "cancelled"]


@dataclass(frozen=True)
class ToolCallRequest:
    """A side-effect call about to run, as the approver sees it: the qualified function
    name and the arguments it would receive (validated and coerced, as JSON values)."""

    function: str
    args: dict[str, Any]

    @property
    def key(self) -> str:
        """Canonical JSON of (function, args): equal for calls that would do the same."""
        return json.dumps([self.function, self.args], sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"), default=repr)

    def describe(self) -> str:
        """`Bank.Transfer(account="X1", amount=5)`: the call as one line."""
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=repr)}"
                         for k, v in self.args.items())
        return f"{self.function}({args})"


def effect_request(registry: ToolRegistry, function: str, args: dict[str, Any]
                   ) -> ToolCallRequest | None:
    """The ledger's view of a call: None for a read-only (or unknown) function, and for
    arguments the schema rejects (such a call fails as data without running, like any
    other); else the request with the validated arguments as JSON values."""
    if function not in registry or not registry.spec(function).side_effects:
        return None
    try:
        validated = registry.validate_args(function, args)
    except LocalAgentError:
        return None
    plain = json.loads(json.dumps(validated, ensure_ascii=False, default=repr))
    return ToolCallRequest(function, plain)


Approve = Callable[[ToolCallRequest], bool]
"""Asked once per distinct side-effect call of a run; True lets it run."""


def approve_all(request: ToolCallRequest) -> bool:
    """An approver that approves every call (the CLI's `--yes`)."""
    return True


def placeholder(function: str) -> str:
    """The value a side-effect call gets in a dry run instead of running."""
    return f"<dry run: {function} was not executed>"


@dataclass(frozen=True)
class Recorded:
    """What became of one distinct side-effect call: its outcome and the result that every
    later request for the same call gets (a value, or the error that stands for it)."""

    request: ToolCallRequest
    outcome: Outcome
    result: ToolResult


class SideEffectLedger:
    """The side-effect calls of one run (see the module docstring for the contract).

    One ledger serves the executors of one run, which run one after another (as
    `Agent.run` runs them); concurrent calls inside one executor run are serialised by
    `guard()`, so two identical calls of one turn run once.
    """

    def __init__(self, approve: Approve | None = None, *, dry_run: bool = False) -> None:
        self.approve = approve
        self.dry_run = dry_run
        self._entries: dict[str, Recorded] = {}
        self._guards: weakref.WeakKeyDictionary[Any, asyncio.Lock] = (
            weakref.WeakKeyDictionary())

    @property
    def entries(self) -> tuple[Recorded, ...]:
        """Every distinct side-effect call of the run, in the order they first came up."""
        return tuple(self._entries.values())

    def get(self, request: ToolCallRequest) -> Recorded | None:
        return self._entries.get(request.key)

    def record(self, recorded: Recorded) -> None:
        self._entries.setdefault(recorded.request.key, recorded)

    def decide(self, request: ToolCallRequest) -> Recorded | None:
        """For a call not seen before: None when it may run now (approved), else the
        dry-run placeholder or the refusal, recorded."""
        if self.dry_run:
            result = ToolResult(request.function, request.args,
                                value=placeholder(request.function))
            return self._keep(Recorded(request, "dry_run", result))
        reason = self._refusal(request)
        if reason is None:
            return None
        result = ToolResult(request.function, request.args, error=ToolError("refused", reason))
        return self._keep(Recorded(request, "refused", result))

    def cancelled(self, request: ToolCallRequest) -> None:
        """Record a call that started and was cancelled: it is never run again."""
        error = ToolError("refused", "an identical call was started and cancelled earlier "
                          "in this run; a side-effect call is not run twice")
        self.record(Recorded(request, "cancelled",
                             ToolResult(request.function, request.args, error=error)))

    def guard(self) -> asyncio.Lock:
        """The lock that serialises side-effect calls on the running event loop."""
        loop = asyncio.get_running_loop()
        if loop not in self._guards:
            self._guards[loop] = asyncio.Lock()
        return self._guards[loop]

    def _refusal(self, request: ToolCallRequest) -> str | None:
        if self.approve is None:
            return (f"{request.function} has side effects and nothing approves it "
                    "(Agent(approve=...); on the command line, --yes)")
        try:
            approved = bool(self.approve(request))
        except (EOFError, OSError) as exc:  # e.g. stdin closed while asking
            return f"{request.function} has side effects and approval failed ({exc!r})"
        return None if approved else f"{request.function} has side effects and was not approved"

    def _keep(self, recorded: Recorded) -> Recorded:
        self.record(recorded)
        return recorded
