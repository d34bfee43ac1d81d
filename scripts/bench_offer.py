"""Offer recall of the tool filter on the suites, by language, without any LLM (issue 20).

Usage: python scripts/bench_offer.py [--suites GLOB] [--translate] [--changed FILE]

For every suite task that has a reference plan (`solution`) and that `bench_planners.py`
filters in its `auto` mode, the filter picks the offered functions for the goal (real
MiniLM embeddings and Chroma, the task's own registry and filter options); a task counts
when every function of its reference plan is offered, the precondition of any planner
solving it. Columns: the English split the filter had before (clauses also cut at
and/then/between/after/before/also), punctuation alone, and the default now (`goal_queries`
and the best function of each half of a long clause, `clause_halves`: no words read); then
how many tasks each offers differently from the first column, in functions or order.

`--translate` adds a column: the default also searching with the goal in English, written
by the default model (`localagent/retrieval/translation.py`, greedy: the same translation
a run makes); `--changed FILE` then writes the tasks whose offer it changes, comma-separated
as `bench_planners.py --tasks` reads them (only those need a planner A/B).
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
_ENGLISH_SPLIT = re.compile(r"[,;:?!.]|\b(?:and|then|between|after|before|also)\b",
                            re.IGNORECASE)


def english_clauses(goal: str) -> list[str]:
    """The filter's clauses until issue 20: punctuation and six English joining words."""
    goal = goal.strip()
    clauses = [c.strip() for c in _ENGLISH_SPLIT.split(goal)]
    whole = goal.rstrip(" ?!.")
    kept = [c for c in clauses if len(c.split()) >= 2 and c != whole]
    return list(dict.fromkeys([goal, *kept]))


def no_halves(goal: str) -> list[str]:
    return []


# name -> (the goal's query texts, the halves whose best function also counts)
VARIANTS: dict[str, tuple[Callable[[str], list[str]], Callable[[str], list[str]]]] = {
    "english split (before)": (english_clauses, no_halves),
    "punctuation": (retrieval_filter.goal_queries, no_halves),
    "punctuation + halves (default)": (retrieval_filter.goal_queries,
                                       retrieval_filter.clause_halves),
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


TRANSLATED = "default + translation"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="benchmarks/suites/*.yaml")
    parser.add_argument("--translate", action="store_true",
                        help="add the column with the model's English translation of the goal")
    parser.add_argument("--changed", type=Path, default=None,
                        help="with --translate: write the tasks whose offer it changes here")
    args = parser.parse_args()
    translator = None
    if args.translate:
        from localagent.llm import load_llm
        from localagent.retrieval.translation import QueryTranslator

        translator = QueryTranslator(load_llm(None))
        VARIANTS[TRANSLATED] = VARIANTS["punctuation + halves (default)"]
    translated_changes: list[str] = []
    index = ToolIndex(Path(tempfile.mkdtemp()) / "index")
    offered = {name: Counter() for name in VARIANTS}
    total: Counter = Counter()
    same: Counter = Counter()
    differing: list[str] = []
    changed: Counter = Counter()
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
            for name, (queries, halves) in VARIANTS.items():
                # filter_tools reads the module's functions
                retrieval_filter.goal_queries, retrieval_filter.clause_halves = queries, halves
                translate = translator if name == TRANSLATED else None
                kept = [s.qualified_name for s in select_specs(task.goal, registry, options, index,
                                                               translate)]
                if translate is not None and kept != offers[-1]:
                    translated_changes.append(task.id)
                offered[name][key] += needed <= set(kept)
                offers.append(kept)
                changed[name] += kept != offers[0]
            same[key] += all(o == offers[0] for o in offers)
            if offers[-1] != offers[0]:
                differing.append(f"{suite.name}/{task.id}")
    retrieval_filter.goal_queries, retrieval_filter.clause_halves = (
        VARIANTS["punctuation + halves (default)"])
    print("| suite | language | filtered tasks | " + " | ".join(VARIANTS)
          + " | same offer, same order |")
    print("|---|---|---:|" + "---:|" * (len(VARIANTS) + 1))
    for key in sorted(total):
        print(f"| {key[0]} | {key[1]} | {total[key]} | "
              + " | ".join(str(offered[n][key]) for n in VARIANTS) + f" | {same[key]} |")
    print(f"| all | | {sum(total.values())} | "
          + " | ".join(str(sum(offered[n].values())) for n in VARIANTS)
          + f" | {sum(same.values())} |")
    first = next(iter(VARIANTS))
    print(f"| offered unlike {first} | | | "
          + " | ".join(str(changed[n]) for n in VARIANTS) + " | |")
    print(f"tasks {list(VARIANTS)[-1]} offers unlike {first}: " + (" ".join(differing) or "none"))
    if translator is not None:
        print(f"{len(translated_changes)} tasks offered otherwise with the translation: "
              + " ".join(translated_changes))
        if args.changed is not None:
            args.changed.write_text(",".join(translated_changes))


if __name__ == "__main__":
    main()
