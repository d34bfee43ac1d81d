"""Benchmark the planners (and models) on a task suite; resumable.

    python scripts/bench_planners.py --suite benchmarks/suites/core.yaml \
        --planners tree,sequential,react,tools --models qwen2.5-coder-0.5b-instruct \
        --repeat 1 --constrain both --filter auto --out results/core

Shows a live progress bar, then a table per model and planner (success rate, parse
failures, runs that gave up, tool-call errors, LLM calls, prompt tokens evaluated and
reused, completion tokens, seconds mean and p95). Writes <out>/runs.jsonl (one line per
run with its full trace), <out>/summary.json, <out>/summary.csv and <out>/chart.png.
An interrupted run continues where it stopped. `--help` lists every option.
"""

from __future__ import annotations

import sys

from localagent.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
