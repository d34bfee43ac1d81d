"""Benchmark every installed catalog model: load time, prompt and generation speed, and
what KV-cache prefix reuse saves in a ReAct-like loop.

Usage: python scripts/bench_llm.py [--models NAME ...] [--threads N]

The reuse comparison replays the *same* 5 growing prompts twice in one run: A keeps the
KV cache between calls (our backend's normal behaviour), B resets it before every call
(what Outlines' wrapper does, DESIGN.md trap 3). We print ratios, not absolute claims.
"""

from __future__ import annotations

import argparse
import time

from localagent.errors import WeightsPackageMissingError
from localagent.llm import load_catalog, load_llm, physical_cores

FEW_SHOT = (
    "You are an agent. Use the tools to answer. Format:\n"
    "Thought: ...\nAction: tool name\nAction Input: JSON\nObservation: result\n"
    "... (repeat) ...\nFinal Answer: the answer\n\n"
    "Tools:\n"
    + "".join(f"- tool_{i}(x: int) -> int: returns the {i}-th transformation of x, "
              f"used for step {i} of numeric pipelines.\n" for i in range(24))
    + "\nQuestion: apply tool_3 to 5, then tool_7 to the result, then add 11.\n"
)


def bench_model(name: str, threads: int) -> dict[str, object]:
    start = time.perf_counter()
    llm = load_llm(name, n_threads=threads)
    load_s = time.perf_counter() - start
    llm.complete("Hello", max_tokens=2)  # warm-up

    llm.reset_cache()
    pp = llm.complete(FEW_SHOT, max_tokens=1)
    pp_tps = pp.usage.prompt_tokens_evaluated / pp.usage.seconds

    llm.reset_cache()
    gen = llm.complete("# A long Python module of utility functions\n", max_tokens=96)
    gen_tps = gen.usage.completion_tokens / gen.usage.seconds

    prompts = _growing_prompts(llm)
    with_reuse = _replay(llm, prompts, reset=False)
    without = _replay(llm, prompts, reset=True)
    llm.close()  # type: ignore[attr-defined]
    return {
        "model": name, "load_s": load_s, "pp_tps": pp_tps, "gen_tps": gen_tps,
        "gen_tokens": gen.usage.completion_tokens, "prompt_tokens_last": pp.usage.prompt_tokens,
        "eval_reuse": with_reuse[0], "eval_reset": without[0],
        "sec_reuse": with_reuse[1], "sec_reset": without[1],
    }


def _growing_prompts(llm) -> list[str]:
    """5 prompts, each the previous one plus the model's step and an observation."""
    llm.reset_cache()
    prompts, prompt = [], FEW_SHOT
    for step in range(5):
        prompts.append(prompt)
        out = llm.complete(prompt, max_tokens=24, stop=["Observation:"])
        prompt += out.text + f"Observation: {step * 17 + 3}\n"
    return prompts


def _replay(llm, prompts: list[str], *, reset: bool) -> tuple[int, float]:
    llm.reset_cache()
    evaluated, seconds = 0, 0.0
    for prompt in prompts:
        if reset:
            llm.reset_cache()
        c = llm.complete(prompt, max_tokens=24, stop=["Observation:"])
        evaluated += c.usage.prompt_tokens_evaluated
        seconds += c.usage.seconds
    return evaluated, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", help="catalog names (default: all installable)")
    parser.add_argument("--threads", type=int, default=physical_cores())
    args = parser.parse_args()
    names = args.models or load_catalog().names()
    rows = []
    for name in names:
        try:
            rows.append(bench_model(name, args.threads))
            print(f"done {name}: {rows[-1]}", flush=True)
        except WeightsPackageMissingError as exc:
            print(f"skipped {name}: {exc.one_line()}")
    print(f"\nthreads={args.threads}; 5-call growing-prompt loop, A = KV-cache reuse, "
          "B = cache reset before each call (same prompts)\n")
    header = ("model", "load s", "prompt tok/s", "gen tok/s", "eval A", "eval B",
              "tokens A/B", "sec A", "sec B", "sec A/B")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        cells = (r["model"], f"{r['load_s']:.2f}", f"{r['pp_tps']:.0f}", f"{r['gen_tps']:.1f}",
                 r["eval_reuse"], r["eval_reset"],
                 f"{r['eval_reuse'] / r['eval_reset']:.3f}",  # type: ignore[operator]
                 f"{r['sec_reuse']:.2f}", f"{r['sec_reset']:.2f}",
                 f"{r['sec_reuse'] / r['sec_reset']:.3f}")  # type: ignore[operator]
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
