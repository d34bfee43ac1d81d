"""Summaries of benchmark records: rows per (model, planner, constrain, filter), a rich
table, summary.json/summary.csv/summary.md, and a PNG chart of success against tokens and seconds.

Token and call columns are means per run; seconds are the agent's wall time per run.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from localagent.errors import UsageError


@dataclass(frozen=True)
class Row:
    model: str
    planner: str
    constrain: bool
    filter: str
    runs: int
    solved: int
    parse_failures: int  # outputs rejected as unparsable or truncated, then retried
    validation_failures: int  # outputs that parsed but failed the tools' schemas, retried
    gave_up: int  # runs that ended with no valid plan or step after the retries
    tool_errors: int  # calls that failed (bad arguments, unknown function, exception)
    llm_calls: float
    prompt_evaluated: float
    prompt_reused: float
    completion: float
    seconds_mean: float
    seconds_p95: float

    @property
    def success(self) -> float:
        return self.solved / self.runs if self.runs else 0.0

    @property
    def label(self) -> str:
        mode = "constrained" if self.constrain else "free"
        return f"{self.planner} {mode}" + ("" if self.filter == "none" else f" {self.filter}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "success": round(self.success, 4)}


def p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile (the value at or below which 95% of runs fall)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summarize(records: Iterable[dict[str, Any]]) -> list[Row]:
    groups: dict[tuple[str, str, bool, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        mode = r.get("filter_mode") or r.get("filter", "none")
        planner = r["planner"] + (f" ({r['techniques']})" if r.get("techniques") else "")
        groups[(r["model"], planner, bool(r["constrain"]), mode)].append(r)
    return [_row(key, rs) for key, rs in sorted(groups.items())]


def _row(key: tuple[str, str, bool, str], rs: list[dict[str, Any]]) -> Row:
    n = len(rs)

    def mean_usage(field: str) -> float:
        return sum(float((r.get("usage") or {}).get(field, 0)) for r in rs) / n

    seconds = [float(r.get("seconds", 0)) for r in rs]
    return Row(
        model=key[0],
        planner=key[1],
        constrain=key[2],
        filter=key[3],
        runs=n,
        solved=sum(1 for r in rs if r.get("ok")),
        parse_failures=sum(int(r.get("parse_failures", 0)) for r in rs),
        validation_failures=sum(int(r.get("validation_failures", 0)) for r in rs),
        gave_up=sum(1 for r in rs if r.get("gave_up")),
        tool_errors=sum(int(r.get("tool_errors", 0)) for r in rs),
        llm_calls=mean_usage("calls"),
        prompt_evaluated=mean_usage("prompt_tokens_evaluated"),
        prompt_reused=mean_usage("prompt_tokens_reused"),
        completion=mean_usage("completion_tokens"),
        seconds_mean=sum(seconds) / n,
        seconds_p95=p95(seconds),
    )


def by_category(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, tuple[int, int]]]:
    """category -> "model planner c|u" (the model's short name) -> (solved, runs)."""
    out: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for r in records:
        model = str(r["model"]).split("-")[0]  # qwen2.5, smollm2...
        tech = f" ({r['techniques']})" if r.get("techniques") else ""
        column = f"{model} {r['planner']}{tech} {'c' if r['constrain'] else 'u'}"
        solved, runs = out[r.get("category") or "-"].get(column, (0, 0))
        out[r.get("category") or "-"][column] = (solved + bool(r.get("ok")), runs + 1)
    return dict(out)


def table(rows: Sequence[Row], title: str = "planner benchmark") -> Any:
    from rich.table import Table

    t = Table(title=title)
    for name in (
        "model",
        "planner",
        "constrained",
        "filter",
        "runs",
        "success",
        "parse fail",
        "invalid",
        "gave up",
        "tool errors",
        "LLM calls",
        "prompt eval",
        "prompt reused",
        "completion",
        "s mean",
        "s p95",
    ):
        t.add_column(name, justify="left" if name in ("model", "planner", "filter") else "right")
    for r in rows:
        t.add_row(
            r.model,
            r.planner,
            "yes" if r.constrain else "no",
            r.filter,
            str(r.runs),
            f"{r.success:.0%} ({r.solved})",
            str(r.parse_failures),
            str(r.validation_failures),
            str(r.gave_up),
            str(r.tool_errors),
            f"{r.llm_calls:.1f}",
            f"{r.prompt_evaluated:.0f}",
            f"{r.prompt_reused:.0f}",
            f"{r.completion:.0f}",
            f"{r.seconds_mean:.1f}",
            f"{r.seconds_p95:.1f}",
        )
    return t


def category_table(records: Sequence[dict[str, Any]]) -> Any:
    from rich.table import Table

    cats = by_category(records)
    columns = sorted({c for v in cats.values() for c in v})
    t = Table(title="solved by category (c = constrained, u = unconstrained)")
    t.add_column("category")
    for c in columns:
        t.add_column(c, justify="right")
    for cat in sorted(cats):
        t.add_row(
            cat,
            *(f"{cats[cat][c][0]}/{cats[cat][c][1]}" if c in cats[cat] else "-" for c in columns),
        )
    return t


def markdown_table(rows: Sequence[Row]) -> str:
    """The summary as a Markdown table (for docs/BENCHMARKS.md)."""
    head = (
        "| model | planner | constrained | filter | runs | success | parse fail | invalid "
        "| gave up "
        "| tool errors | LLM calls | prompt eval | prompt reused | completion | s mean "
        "| s p95 |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.planner} | {'yes' if r.constrain else 'no'} | {r.filter} "
            f"| {r.runs} | {r.success:.0%} ({r.solved}) | {r.parse_failures} "
            f"| {r.validation_failures} | {r.gave_up} "
            f"| {r.tool_errors} | {r.llm_calls:.1f} | {r.prompt_evaluated:.0f} "
            f"| {r.prompt_reused:.0f} | {r.completion:.0f} | {r.seconds_mean:.1f} "
            f"| {r.seconds_p95:.1f} |"
        )
    return "\n".join(lines) + "\n"


def write_summary(rows: Sequence[Row], out_dir: Path) -> tuple[Path, Path]:
    """summary.json and summary.csv (one row per group), written via temp files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = [r.to_dict() for r in rows]
    json_path, csv_path = out_dir / "summary.json", out_dir / "summary.csv"
    tmp = json_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(json_path)
    tmp = csv_path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        fields = list(data[0]) if data else list(Row.__dataclass_fields__) + ["success"]
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(data)
    tmp.replace(csv_path)
    (out_dir / "summary.md").write_text(markdown_table(rows), encoding="utf-8")
    return json_path, csv_path


def draw_chart(rows: Sequence[Row], path: Path) -> Path:
    """Success rate against mean tokens per run and against mean seconds, one point per
    group. matplotlib is optional (the `bench` extra); imported only here."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "the chart needs matplotlib: pip install matplotlib (or skip it with --no-chart)"
        ) from None
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5), constrained_layout=True)
    markers = {"tree": "o", "sequential": "s", "react": "^", "tools": "D"}
    for ax, xlabel, attr in (
        (axes[0], "tokens per run (prompt evaluated + completion)", "tok"),
        (axes[1], "seconds per run (mean)", "sec"),
    ):
        for r in rows:
            x = r.prompt_evaluated + r.completion if attr == "tok" else r.seconds_mean
            kind = r.planner.split(" ")[0]  # "tree (reasoning)" -> tree
            color = f"C{list(markers).index(kind) if kind in markers else 4}"
            ax.scatter(
                x,
                100 * r.success,
                marker=markers.get(kind, "D"),
                s=60,
                edgecolors=color,
                facecolors=color if r.constrain else "none",
            )
            ax.annotate(
                f"{r.model.split('-')[0]} {r.label}",
                (x, 100 * r.success),
                fontsize=7,
                xytext=(4, 3),
                textcoords="offset points",
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("tasks solved (%)")
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
    fig.suptitle("planners: success against cost (filled = constrained, hollow = free)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
