#!/usr/bin/env python3
"""Measure the `decline` probe both ways: refusals where no offered tool answers the goal,
and false refusals where one does, per language variant of a suite.

Every planner's `decline` starts with the same probe (`localagent/planners/decline.py`:
the model, in its own tool-calling format, replies freely for a few tokens; a reply that
opens no call is a refusal), so one pass over the goals prices the technique for all of
them: a false refusal turns a run that could have been right into a miss, a refusal of an
unanswerable goal turns an invented answer into the right outcome. The offered tools are
those the benchmark offers the task (its plugins and filter), as `bench_planners.py` does.

    .venv/bin/python scripts/bench_decline.py --suite benchmarks/suites/multilingual.yaml \
        --variants en,es,zh --threads 1
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from localagent.agent import Agent
from localagent.bench.runner import filter_for
from localagent.bench.suite import Task, load_suite
from localagent.bench.tools import build_registry
from localagent.errors import LocalAgentError
from localagent.llm import load_llm
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.decline import can_probe, goal_declined

REPO = Path(__file__).resolve().parent.parent


def variant(task: Task) -> str:
    """The language variant of a multilingual task id (`...@es`), else "-"."""
    return task.id.rpartition("@")[2] if "@" in task.id else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=str(REPO / "benchmarks/suites/multilingual.yaml"),
                    help="YAML task suite; tasks with `declined: true` should be refused")
    ap.add_argument("--variants", default="",
                    help="comma-separated language variants to keep (en,es,zh); "
                    "unanswerable tasks are always kept (default: all)")
    ap.add_argument("--model", default=None, help="catalog name or .gguf path")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    ap.add_argument("--filter", default="auto", help="the benchmark's filter mode")
    args = ap.parse_args()
    try:
        suite = load_suite(args.suite)
        keep = {v for v in args.variants.split(",") if v}
        tasks = [t for t in suite.tasks if t.declines or not keep or variant(t) in keep]
        llm = load_llm(args.model, n_threads=args.threads)
    except LocalAgentError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    settings = PlannerSettings()
    if not can_probe(llm, settings):
        print(f"error: {llm.info.name} has no tool format in its chat template, so the "
              "probe is never asked (only the grammar's refusal can decline)", file=sys.stderr)
        return 2
    counts: dict[tuple[str, bool], list[int]] = collections.defaultdict(lambda: [0, 0])
    index = None
    start = time.perf_counter()
    for n, task in enumerate(tasks, 1):
        _, options = filter_for(task, args.filter)
        if options is not None and index is None:
            from localagent.retrieval import ToolIndex

            index = ToolIndex(REPO / "results" / "decline-index")
        agent = Agent(llm, registry=build_registry(task, None), filter=options, index=index)
        specs = agent.tools_for(task.goal)
        declined = goal_declined(llm, task.goal, specs, settings, GenerationLog())
        cell = counts[(variant(task), task.declines)]
        cell[0] += declined
        cell[1] += 1
        right = declined == task.declines
        print(f"{n}/{len(tasks)} {task.id}: {'declined' if declined else 'calls'}"
              f"{'' if right else '  (wrong)'}", flush=True)
    table = Table(title=f"decline probe, {llm.info.name}, {len(tasks)} goals, "
                  f"{time.perf_counter() - start:.0f} s")
    for col in ("variant", "refused: no tool answers", "false refusals: a tool answers"):
        table.add_column(col)
    for v in sorted({v for v, _ in counts}):
        right, wrong = counts.get((v, True)), counts.get((v, False))
        table.add_row(v, f"{right[0]}/{right[1]}" if right else "-",
                      f"{wrong[0]}/{wrong[1]}" if wrong else "-")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
