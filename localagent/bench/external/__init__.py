"""Public benchmarks nobody here wrote, run side by side with a raw baseline.

- `bfcl`: the Berkeley Function Calling Leaderboard v4 (data and its own AST checker from
  the `bfcl-eval` package).
- `nestful`: NESTFUL's nested call sequences (the `nestful-wrapper` data package).
- `raw`: the baseline: the same GGUF prompted directly with its chat template and the
  tools, greedy, no grammar, calls read from its `<tool_call>` blocks.

Their data packages are fetched from PyPI into the benchmark cache on first use
(`packages.py`); the product never needs them.
"""
