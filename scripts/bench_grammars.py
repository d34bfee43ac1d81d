"""Benchmark the grammar layer: validity constrained vs unconstrained, compile time, speed.

Per model and format: the parse-and-validate rate over N goals with and without the
constraint (and, constrained, after the planners' retry of a truncated output with twice
the token budget), and the decode speed ratio (constrained tokens/s over unconstrained tokens/s,
measured in the same run on the same prompts). Decode speed is timed between successive
sampler calls (a pass-through processor in the unconstrained run), so prompt evaluation
does not dilute it. Then compile time for 10, 50 and 200 tools (first and cached).

    .venv/bin/python scripts/bench_grammars.py --goals 50 --models qwen2.5-coder-0.5b-instruct
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from localagent import grammars as G
from localagent.constraint import Constraint
from localagent.errors import (
    LocalAgentError,
    TruncatedOutputError,
    WeightsPackageMissingError,
)
from localagent.grammar.samples import demo_tools, goals, hostile_tools, prompt_for
from localagent.llm import load_llm
from localagent.llm.constrained import compile_stats, processor_for, tokenizer_for

MAX_TOKENS = {"sequential": 200, "tree": 200, "react": 120, "tool_call": 160}
STOPS = {"react": ["\nObservation"]}


class _Clock:
    """Wraps a processor (or passes scores through) and stamps every sampler call."""

    def __init__(self, inner: Any = None) -> None:
        self.inner, self.stamps = inner, []

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        self.stamps.append(time.perf_counter())
        return self.inner(input_ids, scores) if self.inner is not None else scores


@dataclass
class Tally:
    valid: int = 0
    total: int = 0
    tokens: int = 0
    seconds: float = 0.0
    recovered: int = 0  # truncated at first, valid after the planners' retries
    failures: list[str] | None = None
    mask_seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def _parser(fmt: str) -> Callable[[str, Sequence], object]:
    return {"sequential": G.parse_sequential, "tree": G.parse_tree,
            "react": G.parse_react, "tool_call": G.parse_tool_calls}[fmt]


def _constraint(fmt: str, tools: Sequence) -> Constraint:
    return {"sequential": G.sequential_plan, "tree": G.tree_plan, "react": G.react_step,
            "tool_call": G.tool_call_turn}[fmt](tools)


def _one(llm: Any, fmt: str, tools: Sequence, prompt: list[int], constraint: Constraint | None,
         tally: Tally, goal: str, max_tokens: int | None = None) -> str:
    """One generation, tallied; "valid", "truncated" or "invalid"."""
    from llama_cpp import LogitsProcessorList

    proc = processor_for(constraint, llm._llama) if constraint is not None else None
    if proc is not None:
        proc.reset()
    clock = _Clock(proc)
    out = llm._llama.create_completion(
        prompt, max_tokens=max_tokens or MAX_TOKENS[fmt], temperature=0.0, repeat_penalty=1.0,
        stop=STOPS.get(fmt, []), logits_processor=LogitsProcessorList([clock]))
    choice, n = out["choices"][0], int(out["usage"]["completion_tokens"])
    if proc is not None:
        proc.check_in_force(n)
        tally.mask_seconds += proc.seconds
    if len(clock.stamps) > 1:
        tally.tokens += len(clock.stamps) - 1
        tally.seconds += clock.stamps[-1] - clock.stamps[0]
    tally.total += 1
    try:
        if choice["finish_reason"] == "length":
            raise TruncatedOutputError("truncated at max_tokens")
        _parser(fmt)(choice["text"], tools)
        tally.valid += 1
        return "valid"
    except LocalAgentError as exc:
        assert tally.failures is not None
        tally.failures.append(f"{goal!r}: {type(exc).__name__}: {str(exc)[:100]}")
        return "truncated" if isinstance(exc, TruncatedOutputError) else "invalid"


def _retry_truncated(llm: Any, fmt: str, tools: Sequence, prompt: list[int],
                     constraint: Constraint, goal: str, retries: int = 2) -> bool:
    """What the planners do after a truncation (`generate_checked`): the same prompt
    again with twice the token budget, up to `retries` times. True once one is valid."""
    budget = MAX_TOKENS[fmt]
    for _ in range(retries):
        budget *= 2
        if _one(llm, fmt, tools, prompt, constraint, Tally(failures=[]), goal, budget) == "valid":
            return True
    return False


def run_format(llm: Any, fmt: str, tools: Sequence, goal_list: Sequence[str]) -> tuple[Tally, Tally]:
    """Constrained and unconstrained, alternating per goal so load drift hits both alike."""
    constraint = _constraint(fmt, tools)
    instructions = G.format_instructions(fmt, tools)
    con, unc = Tally(failures=[]), Tally(failures=[])
    for goal in goal_list:
        prompt = llm.tokenize(prompt_for(llm, instructions, goal))
        if _one(llm, fmt, tools, prompt, constraint, con, goal) == "truncated":
            con.recovered += _retry_truncated(llm, fmt, tools, prompt, constraint, goal)
        _one(llm, fmt, tools, prompt, None, unc, goal)
    return con, unc


def compile_times(llm: Any) -> list[tuple[str, int, float, float]]:
    """(format, n tools, first seconds, cached seconds) for distinct tool sets."""
    start = time.perf_counter()
    tokenizer_for(llm._llama)  # built once per model, not part of a grammar's compile time
    rows = [("(tokenizer build)", 0, time.perf_counter() - start, 0.0)]
    base = demo_tools()
    for n in (10, 50, 200):
        tools = [replace(base[i % len(base)], plugin=f"{base[i % len(base)].plugin}{i}")
                 for i in range(n)]
        for fmt in G.FORMATS:
            timings = []
            for _ in range(2):
                start = time.perf_counter()
                processor_for(_constraint(fmt, tools), llm._llama)
                timings.append(time.perf_counter() - start)
            rows.append((fmt, n, timings[0], timings[1]))
        for label, typed in (("seq backrefs", False), ("seq +typed", True)):
            # the sequential planner's step lists with backward references, untyped and
            # typed (grammar/typed_steps.py), measured side by side
            start = time.perf_counter()
            processor_for(G.sequential_plan(tools, refs="backward", typed=typed), llm._llama)
            rows.append((label, n, time.perf_counter() - start, 0.0))
    start = time.perf_counter()
    processor_for(G.tree_plan(hostile_tools(200)), llm._llama)
    rows.append(("tree (hostile)", 200, time.perf_counter() - start, 0.0))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b-instruct",
                                                    "smollm2-135m-instruct", "gemma-3-270m"])
    ap.add_argument("--formats", nargs="+", default=list(G.FORMATS))
    ap.add_argument("--goals", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp threads (1 is far faster on a busy 2-core machine)")
    ap.add_argument("--compile-only", action="store_true",
                    help="only the compile-time table (first model's tokenizer)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    tools, goal_list, results = demo_tools(), goals(args.goals), []
    for name in args.models:
        try:
            llm = load_llm(name, n_threads=args.threads)
        except WeightsPackageMissingError:
            print(f"{name}: weights not installed, skipped")
            continue
        llm.tokenize(" ")  # warm
        for fmt in [] if args.compile_only else args.formats:
            con, unc = run_format(llm, fmt, tools, goal_list)
            ratio = con.rate / unc.rate if unc.rate else float("nan")
            mask_ms = 1000 * con.mask_seconds / max(con.tokens, 1)
            mask_share = con.mask_seconds / con.seconds if con.seconds else float("nan")
            results.append({"model": name, "format": fmt, "goals": con.total,
                            "valid_constrained": con.valid, "valid_unconstrained": unc.valid,
                            "valid_after_retry": con.valid + con.recovered,
                            "tok_s_constrained": round(con.rate, 1),
                            "tok_s_unconstrained": round(unc.rate, 1),
                            "ratio": round(ratio, 3), "mask_ms_per_token": round(mask_ms, 3),
                            "failures_constrained": con.failures})
            print(f"{name:28} {fmt:10} valid {con.valid:3}/{con.total} constrained "
                  f"({con.valid + con.recovered} after the planners' truncation retries), "
                  f"{unc.valid:3}/{unc.total} unconstrained; tok/s {con.rate:6.1f} vs "
                  f"{unc.rate:6.1f} ratio {ratio:.2f}; mask {mask_ms:.2f} ms/token "
                  f"({100 * mask_share:.1f}% of constrained decode time)", flush=True)
            for failure in con.failures[:3]:
                print("    constrained failure:", failure)
        if name == args.models[0]:
            print("\ncompile (processor_for: grammar build + llguidance compile), "
                  f"tokenizer of {name}:")
            for fmt, n, first, cached in compile_times(llm):
                print(f"  {fmt:15} {n:4} tools  first {first * 1000:8.1f} ms  "
                      f"cached {cached * 1000:7.3f} ms")
            print(f"  {compile_stats()}\n", flush=True)
        llm.close()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
