"""Tables of the external benchmarks: BFCL per category, NESTFUL's metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from localagent.bench.external.run import bfcl_rows, nestful_rows


def bfcl_table(records: Sequence[dict[str, Any]]) -> Any:
    from rich.table import Table

    rows = bfcl_rows(records)
    cats = sorted({c for r in rows for c in r["categories"]})
    table = Table(title="BFCL v4 (BFCL's AST checker)")
    for col in ("model", "planner", "techniques", *cats, "overall", "tokens", "s/case"):
        table.add_column(col, justify="left" if col in ("model", "planner", "techniques")
                         else "right")
    for r in rows:
        cells = [f"{a}/{b}" if (a, b) != (0, 0) else "" for a, b in
                 (r["categories"].get(c, (0, 0)) for c in cats)]
        table.add_row(r["model"], r["planner"], r["techniques"], *cells,
                      f"{r['solved']}/{r['runs']} ({100 * r['solved'] / r['runs']:.0f}%)",
                      f"{r['tokens']:.0f}", f"{r['seconds']:.1f}")
    return table


def nestful_table(records: Sequence[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="NESTFUL (non-executable; win rate needs the executable part)")
    for col in ("model", "planner", "techniques", "samples", "F1 functions", "F1 arguments",
                "partial seq", "full seq", "s/case"):
        table.add_column(col, justify="left" if col in ("model", "planner", "techniques")
                         else "right")
    for r in nestful_rows(records):
        table.add_row(r["model"], r["planner"], r["techniques"], str(r["runs"]),
                      *(f"{r[m]:.2f}" for m in ("f1_functions", "f1_arguments",
                                                "partial_sequence", "full_sequence")),
                      f"{r['seconds']:.1f}")
    return table


def markdown(records: Sequence[dict[str, Any]]) -> str:
    """Both tables as Markdown, for docs/BENCHMARKS.md."""
    lines = []
    rows = bfcl_rows(records)
    if rows:
        cats = sorted({c for r in rows for c in r["categories"]})
        lines.append("| model | planner | techniques | " + " | ".join(cats) + " | overall |")
        lines.append("|---" * (4 + len(cats)) + "|")
        for r in rows:
            cells = [("{}/{}".format(*r["categories"][c]) if c in r["categories"] else "")
                     for c in cats]
            lines.append(f"| {r['model']} | {r['planner']} | {r['techniques']} | "
                         + " | ".join(cells)
                         + f" | {r['solved']}/{r['runs']} ({100 * r['solved'] / r['runs']:.0f}%) |")
    nrows = nestful_rows(records)
    if nrows:
        header = "| model | planner | techniques | samples | F1 func | F1 args | partial | full |"
        lines += ["", header, "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['model']} | {r['planner']} | {r['techniques']} | {r['runs']} | "
                  f"{r['f1_functions']:.2f} | {r['f1_arguments']:.2f} | "
                  f"{r['partial_sequence']:.2f} | {r['full_sequence']:.2f} |" for r in nrows]
    return "\n".join(lines)
