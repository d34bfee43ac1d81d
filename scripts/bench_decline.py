#!/usr/bin/env python3
"""Measure the `decline` probe both ways: refusals where no offered tool answers the goal,
and false refusals where one does, per language variant of a suite or per BFCL category.

Every planner's `decline` starts with the same probe (`localagent/planners/decline.py`:
the model's probability that its first token, in its own tool-calling format, opens a
call; below `DECLINE_BELOW` the goal is refused), so one pass over the goals prices the
technique for all of them: a false refusal turns a run that could have been right into a
miss, a refusal of an unanswerable goal turns an invented answer into the right outcome.
Each goal's probability is printed and kept, so one run also shows what every other
threshold would do (the sweep table). Offered tools: for a suite, those the benchmark
offers the task (its plugins and filter), as `bench_planners.py` does; for BFCL, the case's
own functions, as the tools planner sees them (`--bfcl CATEGORIES`, irrelevance cases
should be refused, all others answered).

`--native` also asks for the model's free reply (`localagent/planners/native.py`: the goal
alone in its chat template, no grammar) and records what it does: calls offered functions,
calls only functions nobody offered (a refusal signal measured for `native`, not used),
answers in prose, or writes calls that are not valid. The last table counts refusals of
the probe alone and of the probe with that signal.

    .venv/bin/python scripts/bench_decline.py --suite benchmarks/suites/multilingual.yaml \
        --variants en,es,zh --threads 1
    .venv/bin/python scripts/bench_decline.py --bfcl simple_python,multiple,irrelevance \
        --per-category 24 --threads 2
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from localagent.bench.external.raw import read_tool_calls
from localagent.errors import LocalAgentError
from localagent.llm import load_llm
from localagent.llm.base import LLM
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.planners.decline import DECLINE_BELOW, call_probability, can_probe, first_turn
from localagent.planners.native import native_reply, wrap_bare_calls
from localagent.tools.manual import openai_tools
from localagent.tools.spec import ToolSpec

REPO = Path(__file__).resolve().parent.parent
SWEEP = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class Goal:
    id: str
    group: str  # a language variant or a BFCL category
    should_decline: bool
    text: str
    tools: list[ToolSpec]


def suite_goals(llm: LLM, path: str, variants: set[str], filter_mode: str) -> Iterator[Goal]:
    from localagent.agent import Agent
    from localagent.bench.runner import filter_for
    from localagent.bench.suite import load_suite
    from localagent.bench.tools import build_registry

    index = None
    for task in load_suite(path).tasks:
        group = task.id.rpartition("@")[2] if "@" in task.id else "-"
        if not (task.declines or not variants or group in variants):
            continue
        _, options = filter_for(task, filter_mode)
        if options is not None and index is None:
            from localagent.retrieval import ToolIndex

            index = ToolIndex(REPO / "results" / "decline-index")
        agent = Agent(llm, registry=build_registry(task, None), filter=options, index=index)
        yield Goal(task.id, group, task.declines, task.goal, agent.tools_for(task.goal))


def bfcl_goals(categories: list[str], per_category: int) -> Iterator[Goal]:
    from localagent.bench.external import bfcl
    from localagent.bench.external.agent_calls import registry_for
    from localagent.bench.external.packages import BFCL, fetch

    for case in bfcl.load_cases(fetch(BFCL), categories, per_category):
        registry, _ = registry_for(case.openai_tools())
        yield Goal(case.id, case.category, case.answer is None, case.goal, registry.specs())


def relevance(goal: Goal) -> float:
    """The best cosine similarity of the goal to an offered tool's description."""
    from localagent.retrieval.embeddings import MiniLMEmbedder

    global _EMBEDDER
    _EMBEDDER = _EMBEDDER or MiniLMEmbedder()
    vectors = _EMBEDDER.embed([goal.text, *(t.embedding_text() for t in goal.tools)])
    return max(sum(a * b for a, b in zip(vectors[0], v)) for v in vectors[1:])


_EMBEDDER = None


def probe(llm: LLM, goal: Goal) -> float:
    return call_probability(llm, first_turn(goal.text), openai_tools(goal.tools),
                            GenerationLog())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=str(REPO / "benchmarks/suites/multilingual.yaml"),
                    help="YAML task suite; tasks with `declined: true` should be refused")
    ap.add_argument("--variants", default="",
                    help="comma-separated language variants to keep (en,es,zh); "
                    "unanswerable tasks are always kept (default: all)")
    ap.add_argument("--bfcl", default="", help="BFCL categories instead of the suite")
    ap.add_argument("--per-category", type=int, default=8,
                    help="evenly spaced BFCL cases a category (0: all)")
    ap.add_argument("--model", default=None, help="catalog name or .gguf path")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    ap.add_argument("--filter", default="auto", help="the benchmark's filter mode")
    ap.add_argument("--native", action="store_true",
                    help="also record the model's free reply and price the `native` refusal")
    ap.add_argument("--out", default=None, help="write one JSON line per goal here")
    args = ap.parse_args()
    try:
        llm = load_llm(args.model, n_threads=args.threads)
        if args.bfcl:
            goals = list(bfcl_goals(args.bfcl.split(","), args.per_category))
        else:
            keep = {v for v in args.variants.split(",") if v}
            goals = list(suite_goals(llm, args.suite, keep, args.filter))
    except LocalAgentError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    if not can_probe(llm, PlannerSettings()):
        print(f"error: {llm.info.name} has no tool format in its chat template, so the "
              "probe is never asked (only the grammar's refusal can decline)", file=sys.stderr)
        return 2
    out = open(args.out, "a", encoding="utf-8", buffering=1) if args.out else None  # noqa: SIM115
    replies: list[tuple[Goal, float, str]] = []  # goal, P(call), what the free reply did
    start = time.perf_counter()
    for n, goal in enumerate(goals, 1):
        p = probe(llm, goal)
        kind = reply_kind(llm, goal) if args.native else "-"
        replies.append((goal, p, kind))
        right = (p < DECLINE_BELOW) == goal.should_decline
        print(f"{n}/{len(goals)} {goal.id}: P(call) {p:.3f}, free reply: {kind}"
              f"{'' if right else '  (wrong)'}", flush=True)
        if out:
            out.write(json.dumps({"id": goal.id, "group": goal.group, "p_call": p,
                                  "reply": kind, "relevance": relevance(goal),
                                  "should_decline": goal.should_decline,
                                  "model": llm.info.name}) + "\n")
    if out:
        out.close()
    seen = [(goal, p) for goal, p, _ in replies]
    Console().print(sweep_table(seen, f"decline probe, {llm.info.name}, {len(goals)} goals, "
                                      f"{time.perf_counter() - start:.0f} s"))
    if args.native:
        Console().print(native_table(replies))
    return 0


def reply_kind(llm: LLM, goal: Goal) -> str:
    """What the free reply does: `offered` (valid calls of offered functions), `unoffered`
    (calls only functions not offered), `prose`, or `invalid` (anything else)."""
    reply = native_reply(llm, goal.text, goal.tools, openai_tools(goal.tools),
                         max_tokens=300, max_calls=4, seed=0, log=GenerationLog())
    if reply.turn is not None:
        return "offered"
    names = [name for name, _ in read_tool_calls(wrap_bare_calls(reply.text))]
    if names and not {t.qualified_name for t in goal.tools}.intersection(names):
        return "unoffered"
    return "prose" if not names and "{" not in reply.text else "invalid"


def native_table(replies: list[tuple[Goal, float, str]]) -> Table:
    """Per group: the free replies' kinds, and refusals of the probe alone and of the probe
    or an unoffered-only free reply (the tools planner's `decline+native`)."""
    kinds = ("offered", "unoffered", "prose", "invalid")
    table = Table(title=f"free replies; refused at P(call) < {DECLINE_BELOW}, alone and "
                        "with an unoffered-only free reply")
    for column in ("group", "counts", *kinds, "probe", "probe or unoffered"):
        table.add_column(column, justify="left" if column in ("group", "counts") else "right")
    by_group: dict[tuple[str, bool], list[tuple[float, str]]] = collections.defaultdict(list)
    for goal, p, kind in replies:
        by_group[(goal.group, goal.should_decline)].append((p, kind))
    for (group, should), rows in sorted(by_group.items()):
        label = "refused" if should else "false refusals"
        table.add_row(group, f"{label} of {len(rows)}",
                      *(str(sum(k == kind for _, k in rows)) for kind in kinds),
                      str(sum(p < DECLINE_BELOW for p, _ in rows)),
                      str(sum(p < DECLINE_BELOW or k == "unoffered" for p, k in rows)))
    return table


def sweep_table(seen: list[tuple[Goal, float]], title: str) -> Table:
    """Per group and threshold: refused / should refuse, or false refusals / answerable."""
    by_group: dict[str, list[tuple[bool, float]]] = collections.defaultdict(list)
    for goal, p in seen:
        by_group[goal.group].append((goal.should_decline, p))
    table = Table(title=title)
    table.add_column("group")
    table.add_column("counts")
    for t in SWEEP:
        table.add_column(f"< {t}" + (" *" if t == DECLINE_BELOW else ""), justify="right")
    for group in sorted(by_group):
        rows = by_group[group]
        for should in (True, False):
            ps = [p for s, p in rows if s == should]
            if ps:
                label = "refused" if should else "false refusals"
                table.add_row(group, f"{label} of {len(ps)}",
                              *(str(sum(p < t for p in ps)) for t in SWEEP))
    return table


if __name__ == "__main__":
    sys.exit(main())
