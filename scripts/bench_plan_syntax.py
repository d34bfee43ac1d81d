"""Tokens of a tree plan as JSON against the same plan as a call expression (issue 22).

Usage: python scripts/bench_plan_syntax.py [--models a,b] [--suites DIR]

Every reference plan (`solution`) of the suites under benchmarks/suites is written twice:
as the raw JSON tree the tree planner's grammar makes a model write
(`{"function": "P.F", "args": {...}}`, json.dumps spacing) and as a call expression
(`localagent/plan_expression.py`: `P.F(a=P.G(x="C"))`), and each is counted with each
model's own tokenizer (the GGUF's vocabulary only; nothing is generated). Each expression is
read back with `parse_expression` and must give the same plan. Prints the tokens per plan
and the ratio expression / JSON per model and suite.

This measures the plan syntax alone: what a model would generate for a correct plan. It
says nothing about accuracy, which needs a grammar for the expression form.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="", help="comma-separated catalog names "
                        "(default: every catalog model that is installed)")
    parser.add_argument("--suites", type=Path, default=REPO / "benchmarks" / "suites")
    args = parser.parse_args(argv)

    from llama_cpp import Llama

    from localagent.bench.suite import load_suite
    from localagent.llm.catalog import load_catalog
    from localagent.llm.loader import resolve_model
    from localagent.plan_expression import parse_expression, to_expression

    plans: dict[str, list[dict]] = {}
    for path in sorted(args.suites.glob("*.yaml")):
        suite = load_suite(path)
        found = [t.solution for t in suite.tasks if t.solution is not None]
        if found:
            plans[suite.name] = found
    mismatched = [p for ps in plans.values() for p in ps if parse_expression(to_expression(p)) != p]
    if mismatched:
        print(f"{len(mismatched)} plans do not read back the same: {mismatched[0]}")
        return 1
    names = [n for n in args.models.split(",") if n] or load_catalog().names()
    print(f"{'model':30} {'suite':16} {'plans':>5} {'JSON tokens':>11} {'expr tokens':>11} "
          f"{'per plan':>13} {'ratio':>5}")
    for name in names:
        try:
            gguf, _ = resolve_model(name)
        except Exception as e:  # noqa: BLE001 - a model that is not installed is skipped
            print(f"{name}: skipped ({e})", file=sys.stderr)
            continue
        vocab = Llama(model_path=str(gguf), vocab_only=True, verbose=False)

        def count(text: str, vocab: Llama = vocab) -> int:
            return len(vocab.tokenize(text.encode(), add_bos=False, special=False))

        for suite_name, suite_plans in plans.items():
            as_json = sum(count(json.dumps(p, ensure_ascii=False)) for p in suite_plans)
            as_expr = sum(count(to_expression(p)) for p in suite_plans)
            n = len(suite_plans)
            print(f"{name:30} {suite_name:16} {n:5} {as_json:11} {as_expr:11} "
                  f"{as_json / n:6.1f} {as_expr / n:6.1f} {as_expr / as_json:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
