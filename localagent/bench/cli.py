"""The command line of `scripts/bench_planners.py`: options, live progress, final report.

Kept in the package (the script only calls `main`) so it can be tested and reused.
Exit codes: 0 when the benchmark ran (whatever the success rate), 2 for bad input,
1 for a runtime failure (a model that cannot load...), 130 when interrupted; finished runs
are kept in either case and the next invocation resumes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from localagent.bench.external.bfcl import DEVELOPMENT
from localagent.bench.runner import FILTER_MODES_HELP
from localagent.errors import LocalAgentError, UsageError
from localagent.paths import REPO_DIR

DEFAULT_SUITE = REPO_DIR / "benchmarks" / "suites" / "core.yaml"
EXAMPLE = """example:
  python scripts/bench_planners.py --suite benchmarks/suites/core.yaml \\
      --planners tree,react --models qwen2.5-coder-0.5b-instruct --constrain both --limit 5

Interrupt at any time: the next run with the same --out continues where it stopped."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and exit code 2, like every localagent command (no usage dump)."""
        self.exit(2, f"error: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="bench_planners.py",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure planners and models on a task suite: success, failures, "
        "LLM calls, tokens and seconds per run.",
    )
    p.add_argument("--suite", type=Path, default=DEFAULT_SUITE, help="YAML or JSON task suite")
    p.add_argument(
        "--planners",
        default="tree,sequential,react,tools",
        help="comma-separated: tree, sequential, react, tools",
    )
    p.add_argument(
        "--models",
        default="",
        help="comma-separated catalog names or .gguf paths (default: the "
        "configured model, see `localagent config show`)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per combination; repeat 0 is greedy, later ones sample",
    )
    p.add_argument("--temperature", type=float, default=0.7, help="for repeats after the first")
    p.add_argument(
        "--constrain",
        choices=("yes", "no", "both"),
        default="yes",
        help="generate under grammars, without, or both",
    )
    p.add_argument("--no-constrain", action="store_true", help="same as --constrain no")
    p.add_argument("--filter", default="auto", help=FILTER_MODES_HELP + "; comma-separated")
    p.add_argument(
        "--techniques",
        default="default",
        help="planning technique variants, ';'-separated, each 'plain', 'default', "
        "switches joined by '+' (reasoning, steps, similar, mentions, grounded, decline, native, "
        "defaults, fresh, values, shallow, numbers, ordered, distinct, typed, compact, backrefs, pipe, "
        "expression, instruct, tags, observe, replan=N, vote=K), or "
        "changes to each planner's default: +name, +name=N, -name, comma-separated (a value starting "
        "with - needs the = form: --techniques=-mentions); "
        "e.g. 'plain;reasoning;reasoning+replan=2;+replan=2,-mentions'",
    )
    p.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    p.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default: results/<suite name> in a checkout, else "
        "$LOCALAGENT_HOME/results/<suite name>); the report covers every "
        "run in it",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads (default: the physical cores; on a busy shared "
        "machine 1 can be several times faster)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild table, summary and chart from the results; run nothing",
    )
    p.add_argument("--no-chart", action="store_true", help="do not draw chart.png")
    p.add_argument(
        "--external",
        default="",
        help="run public benchmarks instead of --suite: bfcl, nestful or both "
        "(comma-separated); the raw baseline (the model prompted directly) runs beside "
        "every planner; data packages are fetched from PyPI on first use",
    )
    p.add_argument(
        "--profile",
        choices=("quick", "full"),
        default=None,
        help="run a whole yardstick at one size instead of --suite/--external: quick (BFCL "
        "development 16 a category, the seed scenarios with 3 seeds, a multilingual subset in "
        "every language, the core suite's first tasks; minutes when its calls are "
        "replayed) or full (the issue-sized run; shard it); starts afresh each time "
        "(earlier results move to <out>/previous/) unless --resume",
    )
    p.add_argument("--shard", default="1/1",
                   help="with --profile: run the i-th of n blocks of every part (i/n)")
    p.add_argument("--resume", action="store_true",
                   help="with --profile: continue an interrupted run instead of starting afresh")
    p.add_argument(
        "--no-replay",
        action="store_true",
        help="generate every model call again instead of reading stored outputs from "
        "<out>/replay.sqlite (new outputs are still stored)",
    )
    p.add_argument(
        "--per-category",
        type=int,
        default=8,
        help="with --external: evenly spaced cases per BFCL category and NESTFUL "
        "source (0: all)",
    )
    p.add_argument(
        "--bfcl-categories",
        default=",".join(DEVELOPMENT),
        help="with --external bfcl: comma-separated categories (the development set by "
        "default; live_simple, live_multiple and live_irrelevance are the held-out check)",
    )
    return p


def default_out_dir(suite_name: str) -> Path:
    """results/<suite> in a checkout (git-ignored), else $LOCALAGENT_HOME/results/<suite>."""
    if (REPO_DIR / ".git").exists():
        return REPO_DIR / "results" / suite_name
    from localagent.paths import home_dir

    return home_dir() / "results" / suite_name


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _constrains(args: argparse.Namespace) -> list[bool]:
    if args.no_constrain:
        if args.constrain not in ("yes", "no"):
            raise UsageError("--no-constrain contradicts --constrain both")
        return [False]
    return {"yes": [True], "no": [False], "both": [True, False]}[args.constrain]


def _models(args: argparse.Namespace) -> list[str]:
    models = _split(args.models)
    if models:
        return models
    from localagent.config import load_settings

    return [load_settings().value("model")]


def _loader(threads: int | None) -> Callable[[str], Any] | None:
    if threads is None:
        return None
    if threads < 1:
        raise UsageError(f"--threads must be at least 1, got {threads}")

    def load(name: str) -> Any:
        from localagent.llm import load_llm

        return load_llm(name, n_threads=threads)

    return load


def run(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console

    from localagent.bench.runner import Benchmark, parse_filter_modes, plan_runs
    from localagent.bench.suite import load_suite
    from localagent.llm.replay import Replaying
    from localagent.planners.techniques import parse_variants

    args = parser().parse_args(argv)
    # a wide table stays readable in logs and pipes; a terminal keeps its own width
    console = Console(width=None if sys.stdout.isatty() else 200)
    if args.profile:
        return _run_profile(args, console)
    if args.external:
        return _run_external(args, console)
    suite = load_suite(args.suite).select(_split(args.tasks) or None, args.limit)
    out_dir = args.out or default_out_dir(suite.name)
    load = Replaying(_loader(args.threads) or _default_load, out_dir, read=not args.no_replay)
    bench = Benchmark(suite, out_dir, temperature=args.temperature, load=load)
    if not args.report_only:
        specs = plan_runs(
            suite,
            _split(args.planners),
            _models(args),
            _constrains(args),
            parse_filter_modes(args.filter),
            args.repeat,
            parse_variants(args.techniques),
        )
        pending = bench.pending(specs)
        console.print(
            f"suite {suite.name}: {len(suite.tasks)} tasks, {len(specs)} runs, "
            f"{len(specs) - len(pending)} already done, results in {out_dir}",
            highlight=False,
        )
        _run_with_progress(bench, pending, console)
        console.print(load.summary(), highlight=False)
    _report(bench, out_dir, console, chart=not args.no_chart)
    return 0


def _run_external(args: argparse.Namespace, console: Any) -> int:
    from localagent.bench.external.report import bfcl_table, markdown, nestful_table
    from localagent.bench.external.run import RAW, ExternalBenchmark, plan_external
    from localagent.llm.replay import Replaying
    from localagent.planners.techniques import parse_variants

    variants = parse_variants(args.techniques)
    out_dir = args.out or default_out_dir("external")
    load = Replaying(_loader(args.threads) or _default_load, out_dir, read=not args.no_replay)
    bench = ExternalBenchmark(out_dir, load)
    if not args.report_only:
        planners = [RAW, *[p for p in _split(args.planners) if p != RAW]]
        runs = plan_external(_split(args.external), planners, _models(args),
                             variants,
                             bfcl_categories=_split(args.bfcl_categories),
                             per_category=args.per_category)
        pending = bench.pending(runs)
        console.print(f"external {args.external}: {len(runs)} runs, "
                      f"{len(runs) - len(pending)} already done, results in {out_dir}",
                      highlight=False)
        _run_with_progress(bench, pending, console)
        console.print(load.summary(), highlight=False)
    records = bench.results.records()
    console.print(bfcl_table(records))
    console.print(nestful_table(records))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.md").write_text(markdown(records) + "\n", encoding="utf-8")
    console.print(f"raw results {bench.results.path}; tables {out_dir / 'summary.md'}",
                  highlight=False)
    return 0


def _run_profile(args: argparse.Namespace, console: Any) -> int:
    from localagent.bench.external.report import bfcl_table, markdown, nestful_table
    from localagent.bench.profile import PROFILES, ProfileRun, jobs_for, parse_shard, shard_of
    from localagent.bench.report import category_table, summarize, table
    from localagent.llm.replay import Replaying
    from localagent.planners.techniques import parse_variants

    i, n = parse_shard(args.shard)
    variants = parse_variants(args.techniques)
    models = _models(args)
    out_dir = args.out or default_out_dir(f"profile-{args.profile}")
    parts = PROFILES[args.profile]
    jobs = [job for part in parts
            for job in shard_of(jobs_for(part, models, variants, out_dir, args.temperature),
                                i, n)]
    profile = ProfileRun(out_dir, Replaying(_loader(args.threads) or _default_load, out_dir,
                                            read=not args.no_replay))
    if not args.resume:
        profile.start_afresh(p.name for p in parts)
    pending = profile.pending(jobs)
    console.print(f"profile {args.profile}, shard {i}/{n}: {len(jobs)} runs, "
                  f"{len(jobs) - len(pending)} already done, results in {out_dir}",
                  highlight=False)
    start = time.perf_counter()
    _run_with_progress(profile, pending, console)
    profile.close()
    for part in parts:
        records = profile.results(part.name).records()
        if not records:
            continue
        if part.kind == "bfcl":
            console.print(bfcl_table(records))
        elif part.kind == "nestful":
            console.print(nestful_table(records))
        elif part.kind == "scenarios":
            console.print(scenario_table(records))
        else:
            console.print(table(summarize(records), title=f"{part.name}: {len(records)} runs"))
            console.print(category_table(records))
        if part.kind in ("bfcl", "nestful"):
            (out_dir / part.name / "summary.md").write_text(markdown(records) + "\n",
                                                            encoding="utf-8")
    console.print(f"{profile.load.summary()}; {len(pending)} runs in "
                  f"{time.perf_counter() - start:.0f} s", highlight=False)
    return 0


def scenario_table(records: Sequence[dict[str, Any]]) -> Any:
    """Seed scenarios: solved seeds per (scenario, planner, techniques)."""
    from collections import defaultdict

    from rich.table import Table

    groups: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for r in records:
        groups[(r["scenario"], r["planner"], r["techniques"])].append(bool(r["ok"]))
    out = Table(title="seed scenarios (seed 0 greedy, others sampled)")
    for col in ("scenario", "planner", "techniques", "solved"):
        out.add_column(col)
    for (scenario, planner, tech), oks in sorted(groups.items()):
        out.add_row(scenario, planner, tech, f"{sum(oks)}/{len(oks)}")
    return out


def _default_load(name: str) -> Any:
    from localagent.llm import load_llm

    return load_llm(name)


def _run_with_progress(bench: Any, pending: list[Any], console: Any) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    solved = [0, 0]
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("starting", total=len(pending))
        keys = iter(pending)

        def show_next() -> None:
            spec = next(keys, None)
            label = spec.key if spec is not None else "done"
            progress.update(bar, description=f"solved {solved[0]}/{solved[1]}  {label}")

        def done(spec: Any, record: dict[str, Any]) -> None:
            solved[0] += bool(record["ok"])
            solved[1] += 1
            if not console.is_terminal:  # logs get a line per run (no live bar there)
                progress.console.print(
                    f"{solved[1]}/{len(pending)} {spec.key}: "
                    f"{'ok' if record['ok'] else 'FAIL'} {record['seconds']:.1f}s",
                    highlight=False,
                    markup=False,
                )
            progress.advance(bar)
            show_next()

        show_next()
        bench.run(pending, on_done=done)


def _report(bench: Any, out_dir: Path, console: Any, *, chart: bool) -> None:
    from localagent.bench.report import category_table, draw_chart, summarize, table, write_summary

    records = bench.results.records()
    if not records:
        console.print("no results yet")
        return
    rows = summarize(records)
    console.print(table(rows, title=f"{bench.suite.name}: {len(records)} runs"))
    console.print(category_table(records))
    json_path, csv_path = write_summary(rows, out_dir)
    console.print(
        f"raw results {bench.results.path}; summary {json_path}, {csv_path}", highlight=False
    )
    if chart:
        console.print(f"chart {draw_chart(rows, out_dir / 'chart.png')}", highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except LocalAgentError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept; run again to continue", file=sys.stderr)
        return 130
    except (OSError, ValueError) as exc:  # unreadable files, a full disk...
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
