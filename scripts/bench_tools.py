"""Benchmark the tool kernel: invocation overhead and how fast hostile input is refused.

Prints absolute times measured in this run and ratios between them (no thresholds):
- registry.invoke overhead for a sync tool (worker thread) vs an async tool, and vs a
  direct Python call;
- the calculator on a normal expression vs `9**9**9**9` and a 10 MB string.

Usage: python scripts/bench_tools.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from localagent import tool
from localagent.errors import CalculatorError
from localagent.tools.calculator import calculate
from localagent.tools.registry import ToolRegistry


class Bench:
    @tool
    def sync_add(self, a: int, b: int) -> int:
        return a + b

    @tool
    async def async_add(self, a: int, b: int) -> int:
        return a + b


def per_call(func: Callable[[], Any], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        func()
    return (time.perf_counter() - start) / repeat


def refused(expression: str) -> Callable[[], None]:
    def run() -> None:
        try:
            calculate(expression)
        except CalculatorError:
            return
        raise AssertionError(f"{expression[:20]!r} was not refused")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    n = parser.parse_args().repeat
    registry = ToolRegistry()
    registry.add_plugin(Bench())
    args = {"a": "2", "b": 3}

    async def many(name: str) -> None:
        for _ in range(n):
            await registry.ainvoke(name, args)

    direct = per_call(lambda: Bench().sync_add(2, 3), n)
    sync_s = asyncio.run(_timed(many, "Bench.sync_add")) / n
    async_s = asyncio.run(_timed(many, "Bench.async_add")) / n
    invoke_s = per_call(lambda: registry.invoke("Bench.sync_add", args), n)
    print(f"direct call            {direct * 1e6:9.1f} us")
    print(f"ainvoke, async tool    {async_s * 1e6:9.1f} us")
    print(f"ainvoke, sync tool     {sync_s * 1e6:9.1f} us  (thread; {sync_s / async_s:.1f}x async)")
    print(f"invoke (own loop)      {invoke_s * 1e6:9.1f} us  ({invoke_s / sync_s:.1f}x ainvoke)")

    normal = per_call(lambda: calculate("(2000 + 1500) * 16**0.43"), n)
    tower = per_call(refused("9**9**9**9"), n)
    huge_text = "1+" * 5_000_000 + "1"
    huge = per_call(refused(huge_text), max(1, n // 10))
    print(f"calculator, normal     {normal * 1e6:9.1f} us")
    print(f"calculator, 9**9**9**9 {tower * 1e6:9.1f} us  ({tower / normal:.2f}x normal)")
    print(f"calculator, 10 MB text {huge * 1e6:9.1f} us  ({huge / normal:.2f}x normal)")


async def _timed(func: Callable[[str], Any], name: str) -> float:
    start = time.perf_counter()
    await func(name)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
