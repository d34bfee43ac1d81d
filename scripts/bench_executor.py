"""Benchmark: a tree of k independent slow calls against the same calls run one by one.

Each call sleeps 0.5 s (a blocking `time.sleep` in a worker thread, or an async
`asyncio.sleep`). The tree `Bench.collect(values=[slow(1), ..., slow(k)])` lets the executor
run the k calls at once; the sequential plan runs the same k calls as k steps. Printed:
seconds of each, and the ratios tree / one call and tree / sequential, for k = 4 and 8,
all measured in this one run.

    .venv/bin/python scripts/bench_executor.py [--seconds 0.5] [--ks 4 8]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from localagent.executor import ExecutionPolicy, Executor
from localagent.plan import Call, SequentialPlan, Step, TreePlan
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry


class Bench:
    """Slow calls that do nothing but wait."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    @tool
    def slow(self, tag: int) -> int:
        """Blocking wait, then the tag."""
        time.sleep(self.seconds)
        return tag

    @tool
    async def aslow(self, tag: int) -> int:
        """Async wait, then the tag."""
        await asyncio.sleep(self.seconds)
        return tag

    @tool
    def collect(self, values: list[int]) -> int:
        """How many values arrived."""
        return len(values)


def measure(executor: Executor, plan: TreePlan | SequentialPlan) -> float:
    start = time.perf_counter()
    result = executor.run_sync(plan)
    seconds = time.perf_counter() - start
    if not result.ok:
        raise SystemExit(f"benchmark run failed: {result.error}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="sleep of each call")
    parser.add_argument("--ks", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args()

    registry = ToolRegistry()
    registry.add_plugin(Bench(args.seconds))
    executor = Executor(registry, ExecutionPolicy(max_workers=max(args.ks), max_calls=None))
    print(f"each call sleeps {args.seconds} s; executor max_workers={max(args.ks)}")
    print(f"{'variant':8} {'k':>3} {'one call':>9} {'tree':>7} {'sequential':>11} "
          f"{'tree/one':>9} {'tree/seq':>9}")
    for variant, function in (("sync", "Bench.slow"), ("async", "Bench.aslow")):
        one = measure(executor, TreePlan(root=Call(function=function, args={"tag": 0})))
        for k in args.ks:
            calls = [Call(function=function, args={"tag": i}) for i in range(k)]
            tree = TreePlan(root=Call(function="Bench.collect", args={"values": tuple(calls)}))
            steps = SequentialPlan(steps=tuple(Step(function=c.function, args=c.args)
                                               for c in calls))
            t_tree, t_seq = measure(executor, tree), measure(executor, steps)
            print(f"{variant:8} {k:>3} {one:>8.3f}s {t_tree:>6.3f}s {t_seq:>10.3f}s "
                  f"{t_tree / one:>9.2f} {t_tree / t_seq:>9.2f}")


if __name__ == "__main__":
    main()
