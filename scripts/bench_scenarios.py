"""Benchmark the planners on the four documented scenarios with the real default model.

Per (scenario, planner): LLM calls, prompt tokens evaluated (and reused from the KV cache),
completion tokens, seconds and success, over `--seeds` seeds (seed 0 is greedy; later
seeds sample at `--temperature`). Then ReAct on the Furina goal twice in one run: with KV
cache reuse, and with the cache reset before every step; the ratio of prompt tokens
evaluated is printed.

    python scripts/bench_scenarios.py [--seeds 1] [--only invoice,furina] [--planners ...]
                                      [--techniques +values]
"""

from __future__ import annotations

import argparse
import time

from localagent.agent import Agent
from localagent.bench.scenarios import Scenario, scenarios
from localagent.executor import Executor
from localagent.llm import load_llm
from localagent.planners.base import MeteredLLM, PlannerSettings
from localagent.planners.react import ReactPlanner
from localagent.planners.techniques import TechniqueSpec, parse_spec


def bench_one(llm, scenario: Scenario, planner: str, seeds: int, temperature: float,
              techniques: TechniqueSpec = None) -> str:
    rows = []
    for seed in range(seeds):
        settings = PlannerSettings(temperature=0.0 if seed == 0 else temperature, seed=seed,
                                   techniques=techniques)
        agent = Agent(llm, registry=scenario.registry(llm), settings=settings)
        result = agent.run(scenario.goal, planner=planner, max_iterations=4)
        why = scenario.judge(result)
        rows.append((result, why))
        mark = "ok" if why is None else f"FAIL: {why}"
        print(f"    seed {seed}: {mark[:300]}", flush=True)
        if why is not None:
            print(f"      model outputs: {result.outputs}"[:1500], flush=True)
    solved = sum(why is None for _, why in rows)
    first = rows[0][0]
    u = first.usage
    return (f"{scenario.name:9} {planner:10} {u.calls:5} {u.prompt_tokens_evaluated:9} "
            f"{u.prompt_tokens_reused:7} {u.completion_tokens:6} {first.seconds:8.1f} "
            f"{solved}/{seeds}")


def bench_cache(llm) -> str:
    scenario = next(s for s in scenarios() if s.name == "furina")
    lines = []
    evaluated = {}
    for reuse in (True, False):
        metered = MeteredLLM(llm)
        registry = scenario.registry(metered)
        planner = ReactPlanner(metered, registry.specs(), reuse_cache=reuse)
        llm.reset_cache()
        start = time.perf_counter()
        out = planner.run(scenario.goal, Executor(registry), max_iterations=4)
        u = metered.usage
        evaluated[reuse] = u.prompt_tokens_evaluated
        lines.append(f"  reuse={reuse!s:5}: {u.calls} steps, prompt tokens {u.prompt_tokens}, "
                     f"evaluated {u.prompt_tokens_evaluated}, reused {u.prompt_tokens_reused}, "
                     f"{time.perf_counter() - start:.1f}s, answer {out.answer!r}")
    ratio = evaluated[True] / max(evaluated[False], 1)
    lines.append(f"  evaluated with reuse / without = {ratio:.3f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--planners", default="", help="comma-separated planners")
    parser.add_argument("--techniques", default="default",
                        help="techniques spec, as bench_planners.py's (default: each "
                             "planner's own default; '+values' changes it)")
    parser.add_argument("--no-cache-bench", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads (default: the physical cores)")
    args = parser.parse_args()
    techniques = parse_spec(args.techniques)  # a bad spec fails before the model loads
    llm = load_llm(n_threads=args.threads)
    print(f"model {llm.info.name}, {args.seeds} seed(s); usage columns are seed 0's")
    header = (f"{'scenario':9} {'planner':10} {'calls':>5} {'evaluated':>9} {'reused':>7} "
              f"{'compl':>6} {'seconds':>8} solved")
    table = []
    chosen = scenarios()
    if args.only:
        by_name = {s.name: s for s in chosen}
        chosen = [by_name[name] for name in args.only.split(",")]
    for scenario in chosen:
        for planner in scenario.planners:
            if args.planners and planner not in args.planners.split(","):
                continue
            print(f"{scenario.name} / {planner}", flush=True)
            table.append(bench_one(llm, scenario, planner, args.seeds, args.temperature,
                                   techniques))
            print("  " + table[-1], flush=True)
    print("\n" + header)
    print("\n".join(table))
    if not args.no_cache_bench:
        print("\nReAct on the Furina goal, KV cache reuse against a reset before every step:")
        print(bench_cache(llm))


if __name__ == "__main__":
    main()
