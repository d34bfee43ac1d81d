"""Would a small model as the draft model speed up the default model? Measured, not built
(issue 45, item 1b).

Usage: python scripts/bench_draft_model.py [--target NAME] [--draft NAME] [--threads N]
                                           [--out rows.jsonl]

Speculative decoding with a draft model pays when the draft model agrees with the target
often and costs little against a target pass. Both are measured here, in one process, on
the calls the default planners really make:

1. Tokenizer: the two GGUFs must share the vocabulary (same size, every id the same
   bytes), or the draft's tokens mean nothing to the target.
2. Acceptance: each planner's README-tour goal runs on the target (greedy, no drafts),
   and every constrained call is kept (prompt, grammar, output). For each output, the
   draft model reads prompt and output in one pass (teacher forcing) and, at every
   position where the grammar leaves a choice, its grammar-masked argmax is compared with
   the target's token. Positions the grammar forces are never drafted (they ride along in
   the verification batch for free), so they are left out.
3. Cost: one forward pass of the draft model for one token, of the target for one token
   and for a batch of 1 + k tokens (the verification), medians on the same cached prompt.
4. The speed-up a draft length k would give, replayed exactly on the measured agreement
   sequences (a round drafts up to k tokens, accepts the leading agreements, writes one
   more): (target passes of plain decoding x their cost) / (rounds x verification cost +
   drafted tokens x draft cost). Forced runs are batched the same way in both.
5. Memory: the process's resident set before and after the draft model is loaded and used.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import INVOICE_WARMUP, TOUR

from localagent.llm import load_llm
from localagent.llm.constrained import processor_for
from localagent.llm.speculative import _decode, _logits

DRAFT_LENGTHS = (2, 4, 8)


@dataclass(frozen=True)
class Call:
    planner: str
    prompt: str
    constraint: Any
    out: list[int]  # the tokens the target wrote, as its KV cache holds them


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def same_vocabulary(a: Any, b: Any) -> tuple[bool, str]:
    """Whether two llama.cpp models share every token id's bytes."""
    la, lb = a.llama, b.llama
    if la.n_vocab() != lb.n_vocab():
        return False, f"vocabulary sizes differ: {la.n_vocab()} against {lb.n_vocab()}"
    for i in range(la.n_vocab()):
        if la._model.token_to_piece(i, special=True) != lb._model.token_to_piece(i, special=True):
            return False, f"token {i} differs"
    return True, f"{la.n_vocab()} tokens, all the same"


def target_calls(target: Any) -> list[Call]:
    """The constrained greedy calls of each tour goal, run warm on the target."""
    from localagent.agent import Agent

    calls: list[Call] = []
    original = target.complete
    planner_now = [""]

    def recording(prompt: str, **kwargs: Any) -> Any:
        out = original(prompt, **kwargs)
        if kwargs.get("constraint") is not None and not kwargs.get("temperature"):
            n_prompt = len(target.tokenize(prompt))
            llama = target.llama
            written = [int(t) for t in llama._input_ids[n_prompt:llama.n_tokens]]
            calls.append(Call(planner_now[0], prompt, kwargs["constraint"], written))
        return out

    agent = Agent(target, examples=True)
    for planner, goal in TOUR:
        agent.run(INVOICE_WARMUP, planner=planner)
        target.complete = recording
        planner_now[0] = planner
        agent.run(goal, planner=planner)
        target.complete = original
    return calls


def agreement(call: Call, target: Any, draft: Any) -> list[bool]:
    """At each grammar choice of the target's output, whether the draft model's masked
    argmax (teacher-forced on the target's tokens) is the target's token."""
    prompt = target.tokenize(call.prompt)
    out = call.out
    llama = draft.llama
    llama.reset()
    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    llama.eval(prompt[:-1])
    batch = [prompt[-1], *out]
    rows: list[Any] = []
    for start in range(0, len(batch), llama.n_batch):  # the output in batches, logits each
        part = batch[start:start + llama.n_batch]
        _decode(llama, part, 0)
        rows += [_logits(llama, i) for i in range(len(part))]
    processor = processor_for(call.constraint, target.llama)
    agrees: list[bool] = []
    i = 0
    while i < len(out):
        if processor.stopped:
            break
        agrees.append(processor.greedy(rows[i]) == out[i])
        forced = processor.advance(out[i])
        i += 1 + len(forced)
    return agrees


def pass_seconds(model: Any, prompt: list[int], size: int, repeat: int = 7) -> float:
    """Median seconds of one forward pass of `size` tokens after `prompt` (cached)."""
    llama = model.llama
    llama.reset()
    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    llama.eval(prompt)
    times = []
    for _ in range(repeat):
        llama._ctx.kv_cache_seq_rm(-1, len(prompt), -1)
        llama.n_tokens = len(prompt)
        start = time.perf_counter()
        _decode(llama, prompt[-size:] if size <= len(prompt) else prompt[:size], 0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def replay(agrees: list[bool], k: int) -> tuple[int, int]:
    """(rounds, drafted tokens) of drafting up to `k` tokens a round over the choices."""
    rounds = drafted = i = 0
    while i < len(agrees):
        size = min(k, len(agrees) - i - 1)
        run = 0
        while run < size and agrees[i + run]:
            run += 1
        rounds += 1
        drafted += size
        i += run + 1
    return rounds, drafted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    target = load_llm(args.target, n_threads=args.threads)
    target.set_prompt_cache(None)
    target.drafts = False  # the target's own greedy text, token by token
    calls = target_calls(target)
    before = rss_mib()
    draft = load_llm(args.draft, n_threads=args.threads)
    loaded = rss_mib()
    same, why = same_vocabulary(target, draft)
    print(f"tokenizer: {'same' if same else 'DIFFERENT'} ({why})")
    if not same:
        sys.exit(1)

    per_planner: dict[str, list[bool]] = {}
    for call in calls:
        per_planner.setdefault(call.planner, []).extend(agreement(call, target, draft))
    used = rss_mib()

    prompt = target.tokenize(calls[0].prompt)
    cost = {"draft_1": pass_seconds(draft, prompt, 1), "target_1": pass_seconds(target, prompt, 1)}
    for k in DRAFT_LENGTHS:
        cost[f"target_{k + 1}"] = pass_seconds(target, prompt, k + 1)

    rows = []
    print(f"\npass seconds: draft 1 token {cost['draft_1']:.3f}, target 1 token "
          f"{cost['target_1']:.3f}, " + ", ".join(
              f"target {k + 1} tokens {cost[f'target_{k + 1}']:.3f}" for k in DRAFT_LENGTHS))
    print(f"memory: {before:.0f} MiB before the draft model, {loaded:.0f} loaded, "
          f"{used:.0f} after use (+{used - before:.0f} MiB)\n")
    print(f"{'planner':11} {'choices':>7} {'agree':>6} " + " ".join(
        f"{'k=' + str(k) + ' speed-up':>14}" for k in DRAFT_LENGTHS))
    for planner, agrees in [*per_planner.items(),
                            ("all", [a for v in per_planner.values() for a in v])]:
        plain = len(agrees) * cost["target_1"]
        ups = {}
        for k in DRAFT_LENGTHS:
            rounds, drafted = replay(agrees, k)
            spent = rounds * cost[f"target_{k + 1}"] + drafted * cost["draft_1"]
            ups[k] = plain / spent if spent else 0.0
        rate = sum(agrees) / len(agrees) if agrees else 0.0
        print(f"{planner:11} {len(agrees):7} {rate:6.0%} " + " ".join(
            f"{ups[k]:14.2f}" for k in DRAFT_LENGTHS))
        rows.append({"planner": planner, "choices": len(agrees), "agree": round(rate, 3),
                     **{f"speedup_k{k}": round(ups[k], 2) for k in DRAFT_LENGTHS}})
    if args.out:
        with args.out.open("w") as fh:
            for row in rows:
                fh.write(json.dumps({**row, **{k: round(v, 4) for k, v in cost.items()},
                                     "draft_mib": round(used - before)}) + "\n")


if __name__ == "__main__":
    main()
