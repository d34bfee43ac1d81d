"""What an execution is configured with (`ExecutionPolicy`) and what it returns
(`ExecutionResult`, with `RunError` saying why there is no value).

Plain data, apart from the executor's machinery, so that planners, the agent and the CLI can
build policies and read results without importing how runs are carried out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from localagent.errors import BudgetExceededError, RuntimeFailure, UsageError
from localagent.tools.spec import ToolError
from localagent.trace import Event


@dataclass(frozen=True)
class ExecutionPolicy:
    """Limits of one executor. `None` means no limit.

    The budget (`max_calls`, `max_seconds`) covers every run of one `Executor`, so a ReAct
    loop that calls `run_call` per step shares it; create one executor per agent run.
    """

    call_timeout: float | None = 60.0
    max_calls: int | None = 100
    max_seconds: float | None = 600.0
    on_error: Literal["stop", "continue"] = "stop"
    max_workers: int = 8
    max_depth: int = 4
    # tree and sequential plans: start read-only calls while the plan is generated
    # (early_calls.py); False runs every call after the whole plan parsed
    stream: bool = True

    def __post_init__(self) -> None:
        problems = [name for name, value in (("max_workers", self.max_workers),
                                             ("max_depth", self.max_depth))
                    if value < 1]
        problems += [name for name, value in (("call_timeout", self.call_timeout),
                                              ("max_seconds", self.max_seconds),
                                              ("max_calls", self.max_calls))
                     if value is not None and value <= 0]
        if problems:
            raise UsageError(f"execution policy: {', '.join(problems)} must be positive")


@dataclass(frozen=True)
class RunError:
    """Why a run (or a value inside it) has no result."""

    kind: Literal["tool", "budget", "reference"]
    message: str
    function: str | None = None
    call_id: int | None = None
    path: str = ""
    tool_error: ToolError | None = None

    def exception(self) -> RuntimeFailure:
        if self.kind == "budget":
            return BudgetExceededError(self.message)
        return RuntimeFailure(self.message)


@dataclass(frozen=True)
class ExecutionResult:
    """The value of a run, or the error that kept it from one, with the full trace.
    `errors` lists every failure recorded (several under error policy "continue")."""

    value: Any
    error: RunError | None
    events: tuple[Event, ...]
    calls: int
    seconds: float
    errors: tuple[RunError, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def source(self) -> str | None:
        """Where the last finished call's outcome came from (`trace.Source`: "tool",
        "recorded", "dry_run", "refused"); for one call (`run_call`) that call's. None
        when no call finished."""
        finished = [e for e in self.events if getattr(e, "kind", "") == "call_finished"]
        return getattr(finished[-1], "source", None) if finished else None

    def unwrap(self) -> Any:
        """The value, or the run's error raised (BudgetExceededError / RuntimeFailure)."""
        if self.error is not None:
            raise self.error.exception()
        return self.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "value": self.value,
            "error": None if self.error is None else _error_dict(self.error),
            "errors": [_error_dict(e) for e in self.errors],
            "calls": self.calls,
            "seconds": round(self.seconds, 4),
            "events": [e.to_dict() for e in self.events],
        }


def _error_dict(error: RunError) -> dict[str, Any]:
    return {"kind": error.kind, "message": error.message, "function": error.function,
            "call_id": error.call_id, "path": error.path}
