"""Start-up of a filtered `localagent run`, with the embedding model's ONNX export against
sentence-transformers, side by side in one run (issue 22, item 5).

Usage: python scripts/bench_startup.py [--repeat N] [--threads N]

The README's invoice goal (`--examples`, tree planner, the default filter) runs as a user
runs it, `localagent run GOAL --json`, in a new process each time, alternating the two
embedding runtimes: `onnx` (the export `localagent models install` makes; no torch import)
and `sentence-transformers` (a models folder without the export: the same GGUF files,
linked). One home and one index for all runs, warmed by one untimed run first, so every
timed run is a second process (the disk prompt cache holds the prompt). Printed per
runtime, medians: process seconds, seconds inside the model calls, and the rest (start-up:
imports, model load, embedding model, filter, grammar), the part this measures; then the
ratio onnx / sentence-transformers of that rest. The last column is issue 45's start-up:
from the moment the process is started to its first model call (the goal's translation
for the filter), timed by a hook in the child (`bench_latency.CHILD`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import INVOICE, INVOICE_ANSWER, Goal, run_process

from localagent.paths import models_dir
from localagent.retrieval.embeddings import bundled_model_path
from localagent.retrieval.onnx_minilm import check

RUNTIMES = ("sentence-transformers", "onnx")


def models_without_export(tmp: Path) -> Path:
    """A models folder with links to every file of the real one but the ONNX export."""
    folder = tmp / "models-st"
    folder.mkdir()
    for item in models_dir().iterdir():
        if item.is_file():
            (folder / item.name).symlink_to(item)
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per runtime")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    args = parser.parse_args()
    if check(bundled_model_path()) is not None:
        print("no ONNX export of the embedding model: run `localagent models install`",
              file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    folders = {"onnx": str(models_dir()), "sentence-transformers": str(models_without_export(tmp))}
    goal = Goal("invoice", INVOICE, ("--examples",), "examples")
    home, index = tmp / "home", tmp / "index"

    def run(runtime: str) -> dict:
        os.environ["LOCALAGENT_MODELS_DIR"] = folders[runtime]
        out = run_process(goal, home, index, args.threads)
        if out.get("error") or out.get("answer") != INVOICE_ANSWER:
            raise SystemExit(f"{runtime}: the run failed: {out.get('error') or out.get('answer')}")
        return out

    run("onnx")  # untimed: builds the index and fills the prompt cache
    rows: dict[str, list[tuple[float, float, float]]] = {r: [] for r in RUNTIMES}
    for i in range(args.repeat):
        for runtime in RUNTIMES if i % 2 == 0 else reversed(RUNTIMES):
            out = run(runtime)
            rows[runtime].append((out["wall"], out["usage"]["seconds"], out["first_call"]))
            print(f"{runtime}: process {out['wall']:.1f} s, model calls "
                  f"{out['usage']['seconds']:.1f} s, first model call at "
                  f"{out['first_call']:.2f} s", file=sys.stderr, flush=True)
    print("| embedding runtime | runs | process s | model calls s | the rest s | "
          "process start to first model call s |")
    print("|---|---:|---:|---:|---:|---:|")
    rest = {}
    for runtime in RUNTIMES:
        walls = [w for w, _, _ in rows[runtime]]
        llm = [s for _, s, _ in rows[runtime]]
        rest[runtime] = statistics.median(w - s for w, s, _ in rows[runtime])
        first = statistics.median(f for _, _, f in rows[runtime])
        print(f"| {runtime} | {len(walls)} | {statistics.median(walls):.1f} | "
              f"{statistics.median(llm):.1f} | {rest[runtime]:.1f} | {first:.2f} |")
    print(f"start-up ratio onnx / sentence-transformers: "
          f"{rest['onnx'] / rest['sentence-transformers']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
