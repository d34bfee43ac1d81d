"""Constrained generation that evaluates grammar-forced tokens as one batch.

Under a grammar many tokens of a plan have no alternative: the keys of a JSON object, the
rest of a function name once its prefix is unique, the closing brackets. Sampling them one
by one costs one forward pass each (about 30 ms for the default model on 2 cores), while a
batch of k tokens costs little more than one, as prompt evaluation does (prompt tokens/s is
4-5x generation tokens/s on a CPU). After each sampled token the llguidance matcher says
which tokens are forced next (the mask admits one token only); they are fed to the matcher and
evaluated together with the sampled token, and sampling resumes at the first real choice.
When the matcher has stopped (the grammar is complete) no further pass is made at all.

`generate` replaces `Llama.create_completion` for constrained calls only (setting
`fast_forward`; by default, auto, for greedy calls under the constraints marked
`Constraint.fast_forward`: the tree and sequential plan grammars), with the same
sampler chain (llama.cpp's top-k/top-p/min-p/temperature with the call's seed, greedy at
temperature 0) and the same prompt-prefix reuse (the KV cells of the longest common prefix
with the previous sequence are kept). Forced tokens are exactly those token-by-token decoding would write, but a batch is
evaluated with another summation order, so logits differ in the last bits: on the
generalisation suite 46 of 47 tree and 43 of 47 tools runs wrote the same outputs, with the
same number right, but the Furina ReAct scenario (English-only rules, deleted since) flips at a greedy
near-tie and was solved 1/5 seeds against 3/5 token by token; hence not for the ReAct and
tool-calling loops' grammars (docs/BENCHMARKS.md, "fast-forward A/B again").
Unconstrained calls keep `create_completion`, so the raw baseline is llama.cpp's own loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localagent.llm.base import common_prefix

if TYPE_CHECKING:
    import llama_cpp

    from localagent.llm.constrained import ConstrainedProcessor

# The sampler settings `create_completion` uses by default; ours pass only temperature/seed.
_SAMPLER = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "typical_p": 1.0,
            "repeat_penalty": 1.0}

Stopping = Callable[[Any, Any], bool]


@dataclass(frozen=True)
class Generated:
    """What one constrained generation produced."""

    text: str
    tokens: int  # sampled plus forced, as `completion_tokens` counts them
    forced: int  # of which evaluated in a batch without sampling
    finish_reason: str  # "stop" or "length"
    seconds: float


def generate(llama: llama_cpp.Llama, prompt: list[int], processor: ConstrainedProcessor,
             *, max_tokens: int, temperature: float, seed: int,
             stop: Sequence[str] = (), stopping: Stopping | None = None) -> Generated:
    """Generate up to `max_tokens` tokens after `prompt` under `processor`'s grammar."""
    from llama_cpp import LogitsProcessorList

    start = time.perf_counter()
    _keep_common_prefix(llama, prompt)
    llama.set_seed(seed)
    sampler = llama._init_sampler(temp=temperature, **_SAMPLER,
                                  logits_processor=LogitsProcessorList([processor]))
    try:
        out, forced, finish, text = _loop(llama, prompt, processor, sampler, max_tokens,
                                          stop, stopping)
    finally:
        sampler.close()
    return Generated(text=text, tokens=len(out), forced=forced, finish_reason=finish,
                     seconds=time.perf_counter() - start)


def _loop(llama: llama_cpp.Llama, prompt: list[int], processor: ConstrainedProcessor,
          sampler: Any, max_tokens: int, stop: Sequence[str],
          stopping: Stopping | None) -> tuple[list[int], int, str, str]:
    """(completion tokens, how many were forced, finish reason, text)."""
    import llama_cpp as native

    vocab = llama._model.vocab
    pending = prompt[llama.n_tokens:]
    out: list[int] = []
    forced = 0
    while len(out) < max_tokens:
        llama.eval(pending)
        token = sampler.sample(llama._ctx, -1)
        if native.llama_vocab_is_eog(vocab, token):
            return out, forced, "stop", _text(llama, out, prompt)
        run = processor.advance(token)
        more = run[:max(0, max_tokens - len(out) - 1)]
        out += [token, *more]
        forced += len(more)
        pending = [token, *more]
        if stop:
            text = _text(llama, out, prompt)
            hit = _first_stop(text, stop)
            if hit is not None:
                return out, forced, "stop", text[:hit]
        if len(more) < len(run):
            # max_tokens cut the forced run: the matcher may already stand at the grammar's
            # end, but the text does not, so this is a truncation, never a stop.
            return out, forced, "length", _text(llama, out, prompt)
        if stopping is not None and stopping(llama._input_ids.tolist() + pending, None):
            return out, forced, "stop", _text(llama, out, prompt)
        if processor.stopped:
            return out, forced, "stop", _text(llama, out, prompt)
    return out, forced, "length", _text(llama, out, prompt)


def _keep_common_prefix(llama: llama_cpp.Llama, prompt: list[int]) -> None:
    """Keep the KV cells of the longest prefix shared with the sequence in memory; at least
    the prompt's last token is evaluated again so its logits are fresh."""
    keep = common_prefix(llama._input_ids.tolist(), prompt[:-1])
    llama._ctx.kv_cache_seq_rm(-1, keep, -1)
    llama.n_tokens = keep


def _text(llama: llama_cpp.Llama, out: list[int], prompt: list[int]) -> str:
    return llama.detokenize(out, prev_tokens=prompt).decode("utf-8", errors="ignore")


def _first_stop(text: str, stop: Sequence[str]) -> int | None:
    hits = [text.index(s) for s in stop if s and s in text]
    return min(hits) if hits else None
