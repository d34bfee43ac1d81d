"""Streamed execution measured: slow tools, two independent chains, with and without.

Issue 45's yardstick: tools that each take `delay` seconds, a goal whose plan is two
independent chains of two calls (a city's country, then that country's population), joined
by a sum. Without streaming, the plan is generated whole and then run (the two chains
concurrently: three waves of `delay`); with streaming (`early_calls.py`), each chain's
calls start while the rest of the plan is still being written.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from localagent.tools.decorator import tool

COUNTRIES = {"Lyon": "France", "Porto": "Portugal", "Kyoto": "Japan", "Cusco": "Peru"}
POPULATIONS = {"France": 68, "Portugal": 10, "Japan": 124, "Peru": 34}  # millions
GOAL = ("Look up the country of Lyon and the country of Porto, then add the populations of "
        "those two countries.")
ANSWER = 78


class SlowAtlas:
    """Lookups that each take `delay` seconds (a remote API, say)."""

    def __init__(self, delay: float = 1.0) -> None:
        self.delay = delay

    @tool
    def country_of(self, city: str) -> str:
        """The country a city is in."""
        time.sleep(self.delay)
        return COUNTRIES.get(city.strip(), "unknown")

    @tool
    def population_of(self, country: str) -> int:
        """A country's population, in millions."""
        time.sleep(self.delay)
        return POPULATIONS.get(country.strip(), 0)

    @tool
    def add(self, a: float, b: float) -> float:
        """a plus b."""
        time.sleep(self.delay)
        return a + b


def streaming_rows(llm: Any, model: str, *, delay: float = 1.0, repeats: int = 3
                   ) -> list[dict[str, Any]]:
    """Per plan planner: the goal warm, `repeats` times each with and without streaming
    (alternating, after one warm-up run); seconds end to end, calls started early, the
    answer. `llm` is loaded once for all runs."""
    from localagent.agent import Agent
    from localagent.execution import ExecutionPolicy
    from localagent.tools.registry import ToolRegistry

    rows = []
    for planner in ("tree", "sequential"):
        registry = ToolRegistry()
        registry.add_plugin(SlowAtlas(delay))
        agents = {stream: Agent(llm, registry=registry,
                                policy=ExecutionPolicy(stream=stream))
                  for stream in (False, True)}
        agents[True].run(GOAL, planner=planner)  # warm-up: the prompt's KV cache
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):
            for stream in (False, True):
                start = time.perf_counter()
                result = agents[stream].run(GOAL, planner=planner)
                times[stream].append(time.perf_counter() - start)
                early = sum(1 for e in result.steps
                            if e.get("kind") == "call_finished" and e.get("source") == "early")
                rows.append({"mode": "streaming", "model": model, "planner": planner,
                             "stream": stream, "seconds": round(times[stream][-1], 2),
                             "early": early, "answer": result.answer,
                             "right": _right(result.answer)})
        without, with_ = (statistics.median(times[s]) for s in (False, True))
        rows.append({"mode": "streaming-summary", "model": model, "planner": planner,
                     "without": round(without, 2), "with": round(with_, 2),
                     "lower": round(1 - with_ / without, 3)})
    return rows


def _right(answer: Any) -> bool:
    try:
        return abs(float(str(answer).replace(",", "")) - ANSWER) < 1e-6
    except ValueError:
        return False
