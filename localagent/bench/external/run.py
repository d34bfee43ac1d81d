"""Run BFCL and NESTFUL cases for planners and the raw baseline; resumable; tables.

A run is (benchmark, case, planner, model, techniques); `planner` is one of localagent's
planners or `raw` (raw.py). Records go to `<out>/runs.jsonl` as each run ends (the same
`ResultsFile` as the suite benchmark), so an interrupted run continues where it stopped.
BFCL rows: share of cases BFCL's checker accepts, per category. NESTFUL rows: the four
metrics of nestful.py, averaged over the samples.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from localagent.bench.external import bfcl, nestful
from localagent.bench.external.agent_calls import agent_calls
from localagent.bench.external.packages import BFCL, NESTFUL, fetch
from localagent.bench.external.raw import raw_turn
from localagent.bench.results import ResultsFile
from localagent.errors import LocalAgentError, UsageError
from localagent.llm.base import LLM
from localagent.planners.techniques import Techniques, TechniqueSpec, resolve

RAW = "raw"
PLANNERS = ("tools", "react", "sequential", "tree")
BENCHMARKS = ("bfcl", "nestful")


@dataclass(frozen=True)
class ExternalRun:
    benchmark: str
    case: Any  # BfclCase | NestfulCase
    planner: str
    model: str
    techniques: Techniques | None  # None for the raw baseline

    @property
    def label(self) -> str:
        return "-" if self.techniques is None else self.techniques.label

    @property
    def key(self) -> str:
        return f"{self.benchmark}|{self.case.id}|{self.planner}|{self.model}|{self.label}"


def plan_external(benchmarks: Sequence[str], planners: Sequence[str], models: Sequence[str],
                  variants: Sequence[TechniqueSpec], *, bfcl_categories: Sequence[str],
                  per_category: int, nestful_sources: Sequence[str] = nestful.SOURCES,
                  cache: Path | None = None) -> list[ExternalRun]:
    """Every run to make, BFCL first; the data packages are fetched here on first use.
    Each variant is resolved per planner (None: its default; changes: to its default)."""
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown:
        raise UsageError(f"unknown external benchmark {unknown}; choose from bfcl, nestful")
    bad = [p for p in planners if p not in (RAW, *PLANNERS)]
    if bad:
        raise UsageError(f"unknown planner {bad}; choose from raw, {', '.join(PLANNERS)}")
    cases: list[tuple[str, Any]] = []
    if "bfcl" in benchmarks:
        root = fetch(BFCL, cache)
        cases += [("bfcl", c) for c in bfcl.load_cases(root, bfcl_categories, per_category)]
    if "nestful" in benchmarks:
        root = fetch(NESTFUL, cache)
        cases += [("nestful", c)
                  for c in nestful.load_cases(root, nestful_sources, per_category)]
    runs = []
    for model in models:
        for b, c in cases:  # case-major: the raw baseline and every planner of one case
            for planner in planners:  # run one after another, sharing the prompt prefix
                for variant in ([None] if planner == RAW else variants):
                    tech = None if planner == RAW else resolve(variant, planner, model)
                    runs.append(ExternalRun(b, c, planner, model, tech))
    return list({r.key: r for r in runs}.values())


def run_external(run: ExternalRun, llm: LLM, cache: Path | None = None) -> dict[str, Any]:
    """One run's record; a crash of the run is recorded, never raised (bad input is)."""
    start = time.perf_counter()
    tools = run.case.openai_tools()
    outputs = None
    try:
        if run.benchmark == "nestful":
            outputs = nestful.TraceableOutputs(tools)
        calls, answer, usage, error = _calls(run, llm, tools, outputs)
        crashed = None
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - one crashed run is data, not the end
        calls, answer, usage, error = [], None, {}, None
        crashed = exc.one_line() if isinstance(exc, LocalAgentError) else f"{type(exc).__name__}: {exc}"
    record: dict[str, Any] = {
        "key": run.key, "benchmark": run.benchmark, "case": run.case.id,
        "category": getattr(run.case, "category", None) or getattr(run.case, "source", ""),
        "planner": run.planner, "model": run.model, "techniques": run.label,
        "calls": [[n, a] for n, a in calls], "answer": answer, "error": error,
        "crashed": crashed, "usage": usage, "seconds": round(time.perf_counter() - start, 3)}
    if run.benchmark == "bfcl":
        root = fetch(BFCL, cache)
        reason = crashed or bfcl.judge(root, run.case, [{n: a} for n, a in calls])
        record.update(ok=reason is None, reason=reason)
    else:
        predicted = nestful.read_back(calls, outputs) if outputs else calls
        scores = nestful.score(run.case.gold, predicted)
        record.update(ok=scores.full_sequence == 1.0, scores=asdict(scores),
                      predicted=[[n, a] for n, a in predicted],
                      gold=[[n, a] for n, a in run.case.gold])
    return record


def _calls(run: ExternalRun, llm: LLM, tools: list[dict[str, Any]],
           outputs: nestful.TraceableOutputs | None) -> tuple[list, Any, dict, str | None]:
    if run.planner == RAW:
        messages = (list(run.case.messages) if run.benchmark == "bfcl"
                    else [{"role": "user", "content": run.case.goal}])
        turn = raw_turn(llm, messages, tools)
        return list(turn.calls), turn.text or None, turn.usage.to_dict(), None
    out = agent_calls(llm, tools, run.case.goal, run.planner, techniques=run.techniques,
                      call_for=outputs.for_function if outputs else None)
    seen: set[str] = set()
    calls = []
    for name, args in out.calls:  # an exact repeat of a call is one call
        key = json.dumps([name, args], sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            calls.append((name, args))
    return calls, out.answer, out.trace.get("usage") or {}, out.error


@dataclass
class ExternalBenchmark:
    out_dir: Path
    load: Callable[[str], LLM]
    cache: Path | None = None

    def __post_init__(self) -> None:
        self.results = ResultsFile(self.out_dir)
        self._models: dict[str, LLM] = {}

    def pending(self, runs: Iterable[ExternalRun]) -> list[ExternalRun]:
        done = self.results.done_keys()
        return [r for r in runs if r.key not in done]

    def run(self, runs: Sequence[ExternalRun],
            on_done: Callable[[ExternalRun, dict[str, Any]], None] | None = None) -> None:
        for r in runs:
            if r.model not in self._models:
                self._models = {r.model: self.load(r.model)}  # one model in memory at a time
            record = run_external(r, self._models[r.model], self.cache)
            self.results.append(record)
            if on_done:
                on_done(r, record)


def bfcl_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, planner, techniques): solved/total per category and overall, tokens."""
    rows = []
    for (model, planner, tech), rs in _groups(records, "bfcl"):
        cats: dict[str, list[bool]] = defaultdict(list)
        for r in rs:
            cats[r["category"]].append(bool(r["ok"]))
        rows.append({"model": model, "planner": planner, "techniques": tech,
                     "categories": {c: (sum(v), len(v)) for c, v in cats.items()},
                     "solved": sum(bool(r["ok"]) for r in rs), "runs": len(rs),
                     "tokens": _mean(rs, "prompt_tokens") + _mean(rs, "completion_tokens"),
                     "seconds": sum(r["seconds"] for r in rs) / len(rs)})
    return rows


def nestful_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for (model, planner, tech), rs in _groups(records, "nestful"):
        metrics = {m: sum(r["scores"][m] for r in rs) / len(rs)
                   for m in ("f1_functions", "f1_arguments", "partial_sequence",
                             "full_sequence")}
        rows.append({"model": model, "planner": planner, "techniques": tech, "runs": len(rs),
                     **metrics, "seconds": sum(r["seconds"] for r in rs) / len(rs)})
    return rows


def _groups(records: Iterable[dict[str, Any]], benchmark: str
            ) -> list[tuple[tuple[str, str, str], list[dict[str, Any]]]]:
    """`benchmark`'s records grouped by (model, planner, techniques), in sorted order."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["benchmark"] == benchmark:
            groups[(r["model"], r["planner"], r["techniques"])].append(r)
    return sorted(groups.items())


def _mean(rs: Sequence[dict[str, Any]], field: str) -> float:
    return sum(float((r.get("usage") or {}).get(field) or 0) for r in rs) / max(len(rs), 1)
