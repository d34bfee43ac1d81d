#!/usr/bin/env python3
"""Calibrate the `decline` thresholds of one model and store them in its catalog entry.

For each goal (BFCL's development categories: `irrelevance` must be declined, the others
answered), the tools planner's first turn is made as it would be with `decline` on (the
model's default techniques, or `--techniques`): the
probe's P(call) (`decline.call_probability`) and the first constrained turn, whose calls
give the stated share (`stated.stated_share`). Every (below, stated_below, sure) on a grid
is then scored offline: the best loses at most `--max-lost` answerable goals (never be
worse than the model alone), and among those declines the most irrelevant ones; ties go
to the lowest `sure`, then the lowest `below` and `stated_below` (a rule the data do not
need stays off). The balanced score (the share right on each side,
averaged) is printed beside it. `--write` stores the best in `models/catalog.toml` (`decline = {...}` in the
model's entry), where `decline.Thresholds.of` reads it.

Model calls go through the replay store (`--replay`, default
results/calibrate-decline/replay.sqlite), so a second run costs seconds.

    .venv/bin/python scripts/calibrate_decline.py --model qwen2.5-coder-1.5b-instruct \
        --per-category 16 --threads 2 [--write]
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from localagent.bench.external import bfcl
from localagent.bench.external.agent_calls import registry_for
from localagent.bench.external.packages import BFCL, fetch
from localagent.llm import load_llm
from localagent.llm.catalog import catalog_path
from localagent.llm.replay import ReplayLLM, ReplayStore
from localagent.paths import REPO_DIR
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.decline import Thresholds, call_probability, first_turn
from localagent.planners.stated import stated_share
from localagent.planners.techniques import Techniques, parse_spec, resolve
from localagent.planners.tool_calling import ToolCallingPlanner

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
GRID_BELOW = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
GRID_STATED = (0.0, 0.25, 0.5, 0.75)
GRID_SURE = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class Reading:
    case: str
    should_decline: bool
    p_call: float
    share: float | None  # None: the first turn called nothing, or its calls need no value


def read(llm, case, techniques: Techniques) -> Reading:
    """The probe and the first constrained turn of `case`, made as the tools planner with
    `techniques` makes them (with `decline` they run before anything else anyway)."""
    registry, _ = registry_for(case.openai_tools())
    tools = registry.specs()
    settings = PlannerSettings(techniques=replace(techniques, decline=False))
    planner = ToolCallingPlanner(llm, tools, settings)
    messages = first_turn(case.goal, techniques.instruct)
    log = GenerationLog()
    p_call = call_probability(llm, messages, planner.schemas, log)
    try:
        turn = planner.next_turn(messages, last=False, log=log,  # grounded: must call
                                 answers=[] if techniques.grounded else None)
        share = stated_share(turn.calls, case.goal, tools) if turn.calls else None
    except Exception:  # noqa: BLE001 - no valid first turn: nothing to share
        share = None
    return Reading(case.id, case.answer is None, p_call, share)


def declines(r: Reading, t: Thresholds) -> bool:
    if r.p_call < t.below:
        return True
    if r.share is None:
        return False
    return r.share < t.stated_below or (r.share < 1.0 and r.p_call < t.sure)


def score(readings: list[Reading], t: Thresholds) -> tuple[float, int, int, int, int]:
    refuse = [r for r in readings if r.should_decline]
    answer = [r for r in readings if not r.should_decline]
    declined = sum(declines(r, t) for r in refuse)
    kept = sum(not declines(r, t) for r in answer)
    balanced = (declined / max(len(refuse), 1) + kept / max(len(answer), 1)) / 2
    return balanced, declined, len(refuse), kept, len(answer)


def write(model: str, t: Thresholds, path: Path) -> None:
    """Set `decline = {...}` in `model`'s [[model]] entry of the catalog at `path`."""
    text = path.read_text(encoding="utf-8")
    line = (f"decline = {{ below = {t.below}, stated_below = {t.stated_below}, "
            f"sure = {t.sure} }}  # scripts/calibrate_decline.py")
    start = text.index(f'name = "{model}"')
    end = text.find("[[model]]", start)
    end = len(text) if end < 0 else end
    entry = text[start:end]
    if re.search(r"^decline = .*$", entry, flags=re.MULTILINE):
        entry = re.sub(r"^decline = .*$", line, entry, count=1, flags=re.MULTILINE)
    else:
        entry = entry.replace("\nsources = [", f"\n{line}\nsources = [", 1)
    path.write_text(text[:start] + entry + text[end:], encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--per-category", type=int, default=16)
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--techniques", default="default",
                        help="the tools planner's techniques whose first turn is read "
                             "(default: the model's own default)")
    parser.add_argument("--replay", type=Path,
                        default=REPO_DIR / "results" / "calibrate-decline" / "replay.sqlite")
    parser.add_argument("--max-lost", type=int, default=0,
                        help="answerable goals the thresholds may decline (default 0)")
    parser.add_argument("--write", action="store_true",
                        help="store the best thresholds in the model's catalog entry")
    args = parser.parse_args()
    cases = bfcl.load_cases(fetch(BFCL, None), args.categories.split(","), args.per_category)
    techniques = resolve(parse_spec(args.techniques), "tools", args.model)
    llm = ReplayLLM(load_llm(args.model, n_threads=args.threads), ReplayStore(args.replay))
    readings = []
    for i, case in enumerate(cases, 1):
        readings.append(read(llm, case, techniques))
        r = readings[-1]
        print(f"{i}/{len(cases)} {r.case}: P(call) {r.p_call:.2f}, stated "
              f"{'-' if r.share is None else f'{r.share:.2f}'}", flush=True)
    grid = [Thresholds(b, s, u) for b, s, u in itertools.product(GRID_BELOW, GRID_STATED,
                                                                GRID_SURE)]
    current = Thresholds.of(llm)
    def rank(t: Thresholds) -> tuple[bool, int, int, float, float, float]:
        _, declined, _, kept, answerable = score(readings, t)
        lost = answerable - kept
        # on a tie, the certainty rule (`sure`) as weak as the data allow, then the
        # lower thresholds: a rule the data do not need stays off
        return (lost > args.max_lost, -declined, lost, t.sure, t.below, t.stated_below)

    ranked = sorted(grid, key=rank)
    print(f"\nmodel calls: {llm.stats.replayed} of {llm.stats.total} replayed")
    print("thresholds (below, stated_below, sure): balanced, declined/irrelevant, "
          "kept/answerable")
    for label, t in [("current", current), *(("best", t) for t in ranked[:5])]:
        s = score(readings, t)
        print(f"  {label:7} ({t.below}, {t.stated_below}, {t.sure}): {s[0]:.3f}, "
              f"{s[1]}/{s[2]}, {s[3]}/{s[4]}")
    if args.write:
        write(args.model, ranked[0], catalog_path())
        print(f"written to {catalog_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
