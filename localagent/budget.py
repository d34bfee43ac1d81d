"""The executor's budget: how many calls and seconds a run (or an agent's loop) may spend.

Kept apart from the executor because it outlives single runs: a ReAct loop calls
`Executor.run_call` once per step, and all its steps draw on one budget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field


class BudgetSpent(Exception):
    """Raised by `Budget.take` when no call may start any more; the message says which."""


@dataclass
class Budget:
    """Counts calls and the seconds since `start()`. `None` limits are unlimited."""

    max_calls: int | None
    max_seconds: float | None
    clock: Callable[[], float]
    used: int = 0
    started: float | None = field(default=None)
    # calls started early (early_calls.py) take from the budget on threads of their own
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def start(self) -> None:
        """Begin the clock at the first run; later runs keep counting from there."""
        if self.started is None:
            self.started = self.clock()

    def reset(self) -> None:
        self.used, self.started = 0, None

    def remaining_seconds(self) -> float | None:
        if self.max_seconds is None or self.started is None:
            return None
        return self.max_seconds - (self.clock() - self.started)

    def take(self, call_timeout: float | None) -> tuple[float | None, bool]:
        """Admit one call: (its timeout, whether the seconds left are what limit it)."""
        with self._lock:
            return self._take(call_timeout)

    def _take(self, call_timeout: float | None) -> tuple[float | None, bool]:
        if self.max_calls is not None and self.used >= self.max_calls:
            raise BudgetSpent(f"budget of {self.max_calls} calls exceeded")
        remaining = self.remaining_seconds()
        if remaining is not None and remaining <= 0:
            raise BudgetSpent(f"budget of {self.max_seconds:g} s exceeded")
        self.used += 1
        if remaining is not None and (call_timeout is None or remaining < call_timeout):
            return remaining, True
        return call_timeout, False
