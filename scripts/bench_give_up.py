"""Benchmark the early stop of unconstrained plans (`json_object_lost`): tokens and seconds.

For each task of a suite, the tree and sequential planners' first unconstrained, greedy
generation is made twice in one run: running to max_tokens (or EOS) as before, and ending
at the first character that seals the output's rejection. Prints the tokens generated, the
seconds (the KV cache is reset before each generation, so both include the prompt), their
ratios, and whether the parser's verdict (accepted or rejected) agreed on
every prompt: a greedy decoder writes the same prefix either way, so the verdict cannot
change; the script checks it.

    .venv/bin/python scripts/bench_give_up.py --models smollm2-135m-instruct --tasks 10
"""

from __future__ import annotations

import argparse
import time

from localagent.bench.suite import load_suite
from localagent.bench.tools import build_registry
from localagent.errors import LocalAgentError
from localagent.grammars import ensure_complete, json_object_lost
from localagent.llm import load_llm
from localagent.planners.base import PlannerSettings
from localagent.planners.sequential import SequentialPlanner
from localagent.planners.techniques import Techniques
from localagent.planners.tree import TreePlanner

PLANNERS = {"tree": TreePlanner, "sequential": SequentialPlanner}


def verdict(planner, tools, completion) -> bool:
    """Whether the planner's parser accepts the output (as `generate_checked` judges it)."""
    try:
        planner.parse(ensure_complete(completion), tools)
        return True
    except LocalAgentError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="benchmarks/suites/core.yaml")
    parser.add_argument("--models", default="smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--tasks", type=int, default=10, help="the first N tasks")
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    suite = load_suite(args.suite)
    tasks = suite.tasks[: args.tasks]
    settings = PlannerSettings(constrain=False, techniques=Techniques())
    print(f"{'model':28} {'planner':10} {'tokens full':>11} {'tokens cut':>10} {'ratio':>6} "
          f"{'s full':>7} {'s cut':>6} {'ratio':>6} verdicts")
    for model in args.models.split(","):
        llm = load_llm(model, n_threads=args.threads)
        for name, cls in PLANNERS.items():
            tokens = {False: 0, True: 0}
            seconds = {False: 0.0, True: 0.0}
            agree = 0
            for task in tasks:
                planner = cls(llm, build_registry(task, llm).specs(), settings)
                tools = planner.tools_for(task.goal)
                messages = planner.messages(task.goal, tools)
                verdicts = []
                for cut in (False, True):
                    llm.reset_cache()  # both evaluate the whole prompt: seconds compare
                    start = time.perf_counter()
                    completion = llm.chat(messages, max_tokens=args.max_tokens, temperature=0.0,
                                          give_up=json_object_lost if cut else None)
                    seconds[cut] += time.perf_counter() - start
                    tokens[cut] += completion.usage.completion_tokens
                    verdicts.append(verdict(planner, tools, completion))
                agree += verdicts[0] == verdicts[1]
            print(f"{model:28} {name:10} {tokens[False]:11} {tokens[True]:10} "
                  f"{tokens[True] / max(tokens[False], 1):6.3f} {seconds[False]:7.1f} "
                  f"{seconds[True]:6.1f} {seconds[True] / max(seconds[False], 1e-9):6.3f} "
                  f"{agree}/{len(tasks)} agree", flush=True)


if __name__ == "__main__":
    main()
