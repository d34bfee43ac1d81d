"""Offer recall of the tool filter on the suites, by language, without any LLM (issue 20).

Usage: python scripts/bench_offer.py [--suites GLOB]

For every suite task that has a reference plan (`solution`) and that `bench_planners.py`
filters in its `auto` mode, the filter picks the offered functions for the goal (real
MiniLM embeddings and Chroma, the task's own registry and filter options); a task counts
when every function of its reference plan is offered, the precondition of any planner
solving it. Columns: the filter's clauses as they are (`goal_queries`) and clauses split
at punctuation only, the language-neutral candidate (no words of any language).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import localagent.retrieval.filter as retrieval_filter
from localagent.bench.runner import filter_for
from localagent.bench.suite import load_suite
from localagent.bench.tools import build_registry
from localagent.planners.base import select_specs
from localagent.retrieval import ToolIndex

REPO = Path(__file__).resolve().parent.parent
_PUNCTUATION = re.compile(r"[,;:?!.\uff0c\u3002\uff1b\uff1a\uff1f\uff01\u3001]")


def punctuation_clauses(goal: str) -> list[str]:
    """The goal and its clauses of two words or more, split at punctuation only."""
    goal = goal.strip()
    whole = goal.rstrip(" ?!.\uff1f\uff01\u3002")
    clauses = [c.strip() for c in _PUNCTUATION.split(goal)]
    kept = [c for c in clauses if len(c.split()) >= 2 and c != whole]
    return list(dict.fromkeys([goal, *kept]))


VARIANTS: dict[str, Callable[[str], list[str]]] = {
    "goal_queries": retrieval_filter.goal_queries,
    "punctuation": punctuation_clauses,
}


def functions_of(plan: Any, out: set[str]) -> set[str]:
    """Every function a reference plan calls, at any depth."""
    if isinstance(plan, dict):
        if "function" in plan:
            out.add(str(plan["function"]))
        for value in plan.values():
            functions_of(value, out)
    elif isinstance(plan, list):
        for value in plan:
            functions_of(value, out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="benchmarks/suites/*.yaml")
    args = parser.parse_args()
    index = ToolIndex(Path(tempfile.mkdtemp()) / "index")
    offered = {name: Counter() for name in VARIANTS}
    total: Counter = Counter()
    same: Counter = Counter()
    differing: list[str] = []
    for path in sorted(REPO.glob(args.suites)):
        suite = load_suite(path)
        for task in suite.tasks:
            _, options = filter_for(task, "auto")
            if task.solution is None or options is None:
                continue
            needed = functions_of(task.solution, set())
            registry = build_registry(task, None)
            key = (suite.name, task.language)
            total[key] += 1
            offers = []
            for name, queries in VARIANTS.items():
                retrieval_filter.goal_queries = queries  # filter_tools reads the module's
                kept = [s.qualified_name for s in select_specs(task.goal, registry, options, index)]
                offered[name][key] += needed <= set(kept)
                offers.append(kept)
            if all(o == offers[0] for o in offers):
                same[key] += 1
            else:
                differing.append(f"{suite.name}/{task.id}")
    retrieval_filter.goal_queries = VARIANTS["goal_queries"]
    print("| suite | language | filtered tasks | " + " | ".join(VARIANTS)
          + " | same offer, same order |")
    print("|---|---|---:|" + "---:|" * (len(VARIANTS) + 1))
    for key in sorted(total):
        print(f"| {key[0]} | {key[1]} | {total[key]} | "
              + " | ".join(str(offered[n][key]) for n in VARIANTS) + f" | {same[key]} |")
    print(f"| all | | {sum(total.values())} | "
          + " | ".join(str(sum(offered[n].values())) for n in VARIANTS)
          + f" | {sum(same.values())} |")
    print("tasks offered differently: " + (" ".join(differing) or "none"))


if __name__ == "__main__":
    main()
