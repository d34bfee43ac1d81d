"""The benchmark matrix: which runs to make, making one, and making them all (resumably).

A run is (task, planner, model, constrain, filter, repeat, techniques). Its key names all
seven, so a
finished run is never redone, and adding a planner or a repeat later only runs what is new.
Repeat 0 decodes greedily; repeat r > 0 samples at `temperature` with seed r, because
greedy repeats of a deterministic model would only measure the clock.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localagent.bench.compare import judge
from localagent.bench.results import ResultsFile
from localagent.bench.suite import Suite, Task
from localagent.bench.tools import build_registry
from localagent.errors import LocalAgentError, UsageError
from localagent.llm.base import LLM
from localagent.llm.recording import RecordingLLM
from localagent.planners.techniques import Techniques, TechniqueSpec, resolve

if TYPE_CHECKING:
    from localagent.retrieval import FilterOptions, ToolIndex

FILTER_MODES_HELP = (
    "none (every tool), auto (filter the tasks with many tools, the "
    "default), on (filter every task), max:N, threshold:T; /whole after one offers "
    "whole plugins that fit (FilterOptions.whole_plugins: auto/whole), /untranslated "
    "searches with the goal alone (FilterOptions.translate off)"
)
SUFFIXES = ("/whole", "/untranslated")


def _split_mode(mode: str) -> tuple[str, set[str]]:
    """A filter mode without its suffixes, and the suffixes."""
    found: set[str] = set()
    while mode.endswith(SUFFIXES):
        suffix = next(x for x in SUFFIXES if mode.endswith(x))
        found.add(suffix)
        mode = mode.removesuffix(suffix)
    return mode, found


@dataclass(frozen=True)
class RunSpec:
    task: Task
    planner: str
    model: str
    constrain: bool
    filter: str  # a mode: none, auto, on, max:N, threshold:T
    repeat: int
    techniques: Techniques = field(default_factory=Techniques)

    @property
    def filter_label(self) -> str:
        return filter_for(self.task, self.filter)[0]

    @property
    def key(self) -> str:
        mode = "c" if self.constrain else "u"
        return "|".join(
            (self.task.id, self.planner, self.model, mode, self.filter_label, str(self.repeat),
             self.techniques.label)
        )


def parse_filter_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    for mode in modes:
        mode = _split_mode(mode)[0]
        name, _, value = mode.partition(":")
        try:
            ok = (
                mode in ("none", "auto", "on")
                or (name == "max" and int(value) >= 1)
                or (name == "threshold" and 0.0 <= float(value) <= 1.0)
            )
        except ValueError:
            ok = False
        if not ok:
            raise UsageError(f"bad --filter {mode!r}: use {FILTER_MODES_HELP}")
    if not modes:
        raise UsageError(f"--filter is empty: use {FILTER_MODES_HELP}")
    return modes


def filter_for(task: Task, mode: str) -> tuple[str, FilterOptions | None]:
    """The label (part of the key) and the filter options for `task` under `mode`; a mode
    ending in `/whole` offers whole plugins that fit (`FilterOptions.whole_plugins`); one
    ending in `/untranslated` searches with the goal alone (`FilterOptions.translate`)."""
    mode, suffixes = _split_mode(mode)
    whole, untranslated = "/whole" in suffixes, "/untranslated" in suffixes
    name, _, value = mode.partition(":")
    max_tools, threshold, include = None, None, ()
    if name == "max":
        max_tools = int(value)
    elif name == "threshold":
        threshold = float(value)
    elif mode == "none" or (mode == "auto" and not task.wants_filter):
        return "none", None
    elif task.filter is not None:
        max_tools, threshold = task.filter.max_tools, task.filter.threshold
        include = task.filter.include
    else:
        max_tools = 8
    from localagent.retrieval import FilterOptions

    label = "+".join(
        p
        for p in (
            f"max{max_tools}" if max_tools is not None else "",
            f"t{threshold:g}" if threshold is not None else "",
            f"inc{len(include)}" if include else "",
            "whole" if whole else "",
            "untranslated" if untranslated else "",
        )
        if p
    )
    return label, FilterOptions(relevancy_threshold=threshold, max_relevant_functions=max_tools,
                                included_functions=tuple(include), whole_plugins=whole,
                                translate=not untranslated)


def plan_runs(
    suite: Suite,
    planners: Sequence[str],
    models: Sequence[str],
    constrains: Sequence[bool],
    filters: Sequence[str],
    repeat: int,
    techniques: Sequence[TechniqueSpec] = (None,),
) -> list[RunSpec]:
    """Every combination, keys unique, in the order that reuses the most KV cache.

    A technique variant None is each planner's own default, and a `TechniqueChanges` is
    changes to it; both are resolved here so that a run's key names the techniques it
    really used.
    """
    from localagent.agent import PLANNERS

    bad = [p for p in planners if p not in PLANNERS]
    if bad or not planners:
        raise UsageError(
            f"unknown planner(s) {', '.join(bad) or '(none)'}; choose from {', '.join(PLANNERS)}"
        )
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeat}")
    specs: dict[str, RunSpec] = {}
    # Model-major (each model loads once); then technique, planner and mode, with the tasks
    # innermost: consecutive runs then share the prompt prefix (instructions, manual,
    # fixed examples) and llama.cpp evaluates only each goal's own tokens.
    for model in models:
        for tech in techniques:
            for planner in planners:
                for constrain in constrains:
                    for mode in filters:
                        for r in range(repeat):
                            for task in suite.tasks:
                                spec = RunSpec(task, planner, model, constrain, mode, r,
                                               resolve(tech, planner, model))
                                specs.setdefault(spec.key, spec)  # auto and none coincide
    return list(specs.values())


def run_one(
    spec: RunSpec,
    llm: RecordingLLM,
    *,
    suite: str = "",
    temperature: float = 0.7,
    index: ToolIndex | None = None,
) -> dict[str, Any]:
    """Make one run and return its record (never raises for the run's own failures)."""
    from localagent.agent import Agent
    from localagent.planners.base import PlannerSettings

    label, options = filter_for(spec.task, spec.filter)
    settings = PlannerSettings(
        constrain=spec.constrain,
        seed=spec.repeat,
        temperature=0.0 if spec.repeat == 0 else temperature,
        techniques=spec.techniques,
    )
    llm.take()
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    start = time.perf_counter()
    try:
        agent = Agent(
            llm,
            registry=build_registry(spec.task, None),
            filter=options,
            settings=settings,
            index=index,
        )
        result = agent.run(
            spec.task.goal, planner=spec.planner, max_iterations=spec.task.max_iterations
        )
        trace = result.to_dict()
        crashed = None
    except UsageError:
        raise  # bad input (a suite naming an unknown plugin...): stop the benchmark
    except Exception as exc:  # noqa: BLE001 - a crash in one run is recorded, not fatal
        message = (
            exc.one_line() if isinstance(exc, LocalAgentError) else f"{type(exc).__name__}: {exc}"
        )
        trace = {
            "answer": None,
            "error": message,
            "steps": [],
            "plan": None,
            "usage": {},
            "parse_failures": 0,
            "seconds": time.perf_counter() - start,
        }
        crashed = message
    return _record(spec, label, suite, started, trace, crashed, llm)


def _record(
    spec: RunSpec,
    label: str,
    suite: str,
    started: str,
    trace: dict[str, Any],
    crashed: str | None,
    llm: RecordingLLM,
) -> dict[str, Any]:
    from localagent.bench.checks import calls_of

    calls = calls_of(trace)
    reason = judge(spec.task, trace.get("answer"), trace)
    error = trace.get("error") or ""
    return {
        "key": spec.key,
        "suite": suite,
        "task": spec.task.id,
        "category": spec.task.category,
        "planner": spec.planner,
        "model": spec.model,
        "constrain": spec.constrain,
        "filter": label,
        "filter_mode": spec.filter,
        "repeat": spec.repeat,
        "techniques": spec.techniques.label,
        "started_at": started,
        "ok": reason is None,
        "reason": reason,
        "answer": trace.get("answer"),
        "error": trace.get("error"),
        "crashed": crashed,
        "parse_failures": int(trace.get("parse_failures") or 0),
        "validation_failures": int(trace.get("validation_failures") or 0),
        "gave_up": "no valid output" in error,
        "tool_calls": len(calls),
        "tool_errors": sum(1 for c in calls if c.get("error")),
        "tools_offered": len(trace.get("tools") or []),
        "usage": trace.get("usage") or {},
        "seconds": round(float(trace.get("seconds") or 0), 3),
        "outputs": [e.to_dict() for e in llm.take()],
        "trace": trace,
    }


@dataclass
class Benchmark:
    """Runs a list of RunSpecs, skipping finished keys, appending each record at once.

    `load` turns a model name into an LLM (default: `load_llm`); `index_dir` holds the
    tool index used when a run filters (opened on first need).
    """

    suite: Suite
    out_dir: Path
    load: Callable[[str], LLM] | None = None
    temperature: float = 0.7
    index_dir: Path | None = None
    keep_prompts: bool = False
    results: ResultsFile = field(init=False)

    def __post_init__(self) -> None:
        self.results = ResultsFile(self.out_dir)
        self.code_version = code_version()
        self._llm: tuple[str, RecordingLLM] | None = None
        self._index: ToolIndex | None = None

    def pending(self, specs: Iterable[RunSpec]) -> list[RunSpec]:
        done = self.results.done_keys()
        return [s for s in specs if s.key not in done]

    def run(
        self,
        specs: Sequence[RunSpec],
        on_done: Callable[[RunSpec, dict[str, Any]], None] | None = None,
    ) -> int:
        """Run what is not done yet; returns how many runs were made."""
        made = 0
        for spec in self.pending(specs):
            index = self._index_for(spec)
            record = run_one(
                spec,
                self._model(spec.model),
                suite=self.suite.name,
                temperature=self.temperature,
                index=index,
            )
            self.results.append({**record, "code": self.code_version})
            made += 1
            if on_done is not None:
                on_done(spec, record)
        return made

    def _model(self, name: str) -> RecordingLLM:
        if self._llm is not None and self._llm[0] == name:
            return self._llm[1]
        if self._llm is not None:
            close = getattr(self._llm[1].inner, "close", None)
            if callable(close):
                close()
        if self.load is None:
            from localagent.llm import load_llm

            inner = load_llm(name)
        else:
            inner = self.load(name)
        self._llm = (name, RecordingLLM(inner, keep_prompts=self.keep_prompts))
        return self._llm[1]

    def _index_for(self, spec: RunSpec) -> ToolIndex | None:
        if spec.filter_label == "none":
            return None
        if self._index is None:
            from localagent.retrieval import ToolIndex

            self._index = ToolIndex(self.index_dir or self.out_dir / "index")
        return self._index


def code_version() -> str:
    """The checkout's commit (+ "-dirty" with uncommitted changes under localagent/), so
    results from different code are never mistaken for one another; "" outside git."""
    import subprocess

    from localagent.paths import REPO_DIR

    if not (REPO_DIR / ".git").exists():
        return ""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "localagent"],
            check=False,
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
