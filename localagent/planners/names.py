"""The names of the four planners, in one leaf module: settings, the CLI and the benchmark
check a planner name without importing the planners (or the agent) themselves."""

from __future__ import annotations

from typing import Literal, get_args

PlannerName = Literal["tree", "sequential", "react", "tools"]
PLANNERS: tuple[str, ...] = get_args(PlannerName)
