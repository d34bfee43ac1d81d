"""Two sizes of every yardstick: `--profile quick` and `--profile full` of bench_planners.py.

A profile is a list of parts, each an existing benchmark at a chosen size: BFCL and NESTFUL
(external/run.py, with the raw baseline), the seed scenarios (scenarios.py), the
multilingual suite and the core suite (runner.py). Every part writes its own
`<out>/<part>/runs.jsonl`; all parts share one replay store (`<out>/replay.sqlite`,
llm/replay.py), so a re-run generates only the model calls that changed.

Why a re-run starts afresh: the point of a profile is to measure the code as it is now;
with the calls replayed, a re-run of unchanged code costs minutes, not an hour. The
previous results move to `<out>/previous/` (`--resume` continues an interrupted run
instead). `--shard i/n` runs the i-th of n contiguous blocks of every part, so each part's
consecutive runs still share their prompt prefix in the KV cache; shards write to the same
folders and the report covers whatever has been run.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localagent.bench.results import ResultsFile
from localagent.errors import UsageError
from localagent.llm.base import LLM
from localagent.llm.replay import Replaying
from localagent.paths import REPO_DIR
from localagent.planners.techniques import TechniqueSpec

SUITES = REPO_DIR / "benchmarks" / "suites"


@dataclass(frozen=True)
class Part:
    """One yardstick at one size. `kind`: bfcl, nestful, scenarios or a suite file's stem;
    `size`: cases per BFCL category / NESTFUL source, seeds per scenario, or tasks of a
    suite (for multilingual: originals, each in every language; 0: all)."""

    name: str
    kind: str
    size: int
    planners: tuple[str, ...] = ()


PROFILES: dict[str, tuple[Part, ...]] = {
    "quick": (
        Part("bfcl", "bfcl", 16, ("tools",)),
        Part("scenarios", "scenarios", 3),
        Part("multilingual", "multilingual", 4, ("tree", "tools")),
        Part("core", "core", 4, ("tree", "sequential", "react", "tools")),
    ),
    "full": (
        Part("bfcl", "bfcl", 48, ("tools",)),
        Part("nestful", "nestful", 50, ("tools", "react", "sequential", "tree")),
        Part("scenarios", "scenarios", 5),
        Part("multilingual", "multilingual", 0, ("tree", "tools")),
        Part("core", "core", 0, ("tree", "sequential", "react", "tools")),
    ),
}
# BFCL's parallel categories are smaller; the issue-sized run takes 16 of each.
BFCL_SMALL = {"parallel": 16, "parallel_multiple": 16}


@dataclass(frozen=True)
class Job:
    """One run of a part: its key in the part's results and how to make its record."""

    part: str
    key: str
    make: Callable[[LLM], dict[str, Any]] = field(compare=False, repr=False)
    model: str = ""


def parse_shard(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n), 1 <= i <= n; UsageError otherwise."""
    try:
        i, n = (int(p) for p in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard takes i/n (e.g. 2/3), got {text!r}") from None
    if not 1 <= i <= n:
        raise UsageError(f"--shard {text}: need 1 <= i <= n")
    return i, n


def shard_of(items: Sequence[Any], i: int, n: int) -> list[Any]:
    """The i-th (1-based) of n contiguous, nearly equal blocks of `items`."""
    start, end = (len(items) * (i - 1)) // n, (len(items) * i) // n
    return list(items[start:end])


def jobs_for(part: Part, models: Sequence[str], variants: Sequence[TechniqueSpec],
             out_dir: Path, temperature: float = 0.7) -> list[Job]:
    """Every run of `part` for `models`, in the order that reuses the most KV cache."""
    if part.kind in ("bfcl", "nestful"):
        return _external_jobs(part, models, variants)
    if part.kind == "scenarios":
        return _scenario_jobs(part, models, variants, temperature)
    return _suite_jobs(part, models, variants, out_dir, temperature)


def _external_jobs(part: Part, models: Sequence[str],
                   variants: Sequence[TechniqueSpec]) -> list[Job]:
    from localagent.bench.external import bfcl
    from localagent.bench.external.run import RAW, plan_external, run_external

    planners = [RAW, *part.planners]
    if part.kind == "bfcl":
        runs = []
        for category in bfcl.DEVELOPMENT:
            size = min(part.size, BFCL_SMALL.get(category, part.size)) if part.size else 0
            runs += plan_external(["bfcl"], planners, models, variants,
                                  bfcl_categories=[category], per_category=size)
    else:
        runs = plan_external(["nestful"], planners, models, variants, bfcl_categories=[],
                             per_category=part.size)
    return [Job(part.name, r.key, (lambda llm, r=r: run_external(r, llm)), r.model)
            for r in runs]


def _scenario_jobs(part: Part, models: Sequence[str], variants: Sequence[TechniqueSpec],
                   temperature: float) -> list[Job]:
    from localagent.bench.scenarios import scenarios
    from localagent.planners.techniques import resolve

    jobs = []
    for model in models:
        for variant in variants:
            for scenario in scenarios():
                for planner in scenario.planners:
                    tech = resolve(variant, planner, model)
                    for seed in range(part.size):
                        key = f"{scenario.name}|{planner}|{model}|{tech.label}|{seed}"
                        jobs.append(Job(part.name, key, _scenario_maker(
                            key, scenario, planner, tech, seed, temperature), model))
    return jobs


def _scenario_maker(key: str, scenario: Any, planner: str, tech: Any, seed: int,
                    temperature: float) -> Callable[[LLM], dict[str, Any]]:
    def make(llm: LLM) -> dict[str, Any]:
        from localagent.agent import Agent
        from localagent.planners.base import PlannerSettings

        settings = PlannerSettings(temperature=0.0 if seed == 0 else temperature, seed=seed,
                                   techniques=tech)
        start = time.perf_counter()
        record = {"key": key, "scenario": scenario.name, "planner": planner,
                  "techniques": tech.label, "seed": seed}
        try:
            result = Agent(llm, registry=scenario.registry(llm), settings=settings).run(
                scenario.goal, planner=planner, max_iterations=4)
        except Exception as exc:  # noqa: BLE001 - one crashed run is data, not the end
            record.update(ok=False, reason=f"crashed: {type(exc).__name__}: {exc}",
                          answer=None, usage={})
        else:
            why = scenario.judge(result)
            record.update(ok=why is None, reason=why, answer=result.answer,
                          usage=result.usage.to_dict())
        return {**record, "seconds": round(time.perf_counter() - start, 3)}

    return make


def _suite_jobs(part: Part, models: Sequence[str], variants: Sequence[TechniqueSpec],
                out_dir: Path, temperature: float) -> list[Job]:
    from localagent.bench.runner import Benchmark, plan_runs
    from localagent.bench.suite import load_suite

    suite = load_suite(SUITES / f"{part.kind}.yaml")
    if part.size:
        if part.kind == "multilingual":  # the first originals, each in every language
            bases = list(dict.fromkeys(t.id.split("@")[0] for t in suite.tasks))[:part.size]
            suite = suite.select([t.id for t in suite.tasks if t.id.split("@")[0] in bases])
        else:
            suite = suite.select(None, part.size)
    specs = plan_runs(suite, part.planners, models, [True], ["auto"], 1, variants)
    bench = Benchmark(suite, out_dir / part.name, temperature=temperature)  # its index

    def maker(spec: Any) -> Callable[[LLM], dict[str, Any]]:
        def make(llm: LLM) -> dict[str, Any]:
            from localagent.bench.runner import run_one
            from localagent.llm.recording import RecordingLLM

            record = run_one(spec, RecordingLLM(llm), suite=suite.name,
                             temperature=temperature, index=bench._index_for(spec))
            return {**record, "code": bench.code_version}

        return make

    return [Job(part.name, s.key, maker(s), s.model) for s in specs]


@dataclass
class ProfileRun:
    """Runs jobs with one model in memory at a time, loaded through `load` (a `Replaying`
    loader over the shared store); appends every record to its part's results as it
    ends."""

    out_dir: Path
    load: Replaying

    def __post_init__(self) -> None:
        self._model: tuple[str, LLM] | None = None

    def results(self, part: str) -> ResultsFile:
        return ResultsFile(self.out_dir / part)

    def start_afresh(self, parts: Iterable[str]) -> None:
        """Move the parts' earlier results to `<out>/previous/` (replaced each time)."""
        previous = self.out_dir / "previous"
        for part in parts:
            src = self.out_dir / part / "runs.jsonl"
            if src.is_file():
                (previous / part).mkdir(parents=True, exist_ok=True)
                shutil.move(str(src), previous / part / "runs.jsonl")

    def pending(self, jobs: Iterable[Job]) -> list[Job]:
        done: dict[str, set[str]] = {}
        out = []
        for job in jobs:
            if job.part not in done:
                done[job.part] = self.results(job.part).done_keys()
            if job.key not in done[job.part]:
                out.append(job)
        return out

    def run(self, jobs: Sequence[Job],
            on_done: Callable[[Job, dict[str, Any]], None] | None = None) -> None:
        for job in jobs:
            record = job.make(self._llm(job.model))
            self.results(job.part).append(record)
            if on_done is not None:
                on_done(job, record)

    def _llm(self, name: str) -> LLM:
        if self._model is None or self._model[0] != name:
            self.close()
            self._model = (name, self.load(name))
        return self._model[1]

    def close(self) -> None:
        """Close the model in memory, if any (its replay counts stay in `load.stats`)."""
        if self._model is not None:
            close = getattr(self._model[1], "close", None)
            if callable(close):
                close()
            self._model = None
