"""Greedy constrained generation with drafts from the prompt, verified in one batch.

A plan or a tool call mostly copies: function and parameter names from the manual, values
from the goal and from earlier results, a whole call again in a later turn. Prompt-lookup
decoding (`lookup`) drafts the tokens that followed the last n-gram written the last time
it occurred in the prompt or the output (llama-cpp-python's `LlamaPromptLookupDecoding`
takes the first occurrence instead, which drafted worse here). Drafts the
grammar would reject are cut off before any model work (`ConstrainedProcessor.admitted`),
and the rest is evaluated in one batch with the token before it: on 2 CPU cores one
forward pass of 8 tokens costs about 2.9x a pass of one (measured on the 1.5B, 260 ms
against 91 ms), so every draft token the model agrees with is nearly free.

Verification is exact for greedy decoding: at each drafted position the token written is
the argmax of the grammar-masked logits there, as token-by-token decoding takes it
(`ConstrainedProcessor.greedy`); the first disagreement ends the round with the model's
own token, and the KV cells of the rejected drafts are dropped. Tokens the grammar forces
after a written token are fed to the matcher at once (`advance`), as in `fast_forward`.
Logits computed in a batch can differ from one-by-one logits in their last bits, so a
greedy near-tie can flip (see `fast_forward.py`); tests compare the texts on real models.

Sampled calls never use drafts: the accepted tokens would not be the draws the seed makes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from localagent.llm.base import common_prefix
from localagent.llm.fast_forward import _first_stop, _keep_common_prefix, _text

if TYPE_CHECKING:
    import llama_cpp

    from localagent.llm.constrained import ConstrainedProcessor
    from localagent.llm.fast_forward import Stopping

MAX_NGRAM = 3  # the longest n-gram looked up in the prompt and the output
DRAFT_LIMITS = (2, 16)  # a round drafts between these many tokens, as drafts pay off
FIRST_DRAFT = 8


@dataclass(frozen=True)
class Drafted:
    """What one speculative generation produced."""

    text: str
    tokens: int  # written, as `completion_tokens` counts them
    forced: int  # of which the grammar forced
    drafted: int  # draft tokens evaluated
    accepted: int  # of which the model agreed with
    rounds: int  # forward passes after the prompt's
    finish_reason: str
    seconds: float


def generate_drafted(llama: llama_cpp.Llama, prompt: list[int],
                     processor: ConstrainedProcessor, *, max_tokens: int,
                     stop: Sequence[str] = (), stopping: Stopping | None = None) -> Drafted:
    """Greedy generation of up to `max_tokens` tokens after `prompt` under `processor`'s
    grammar; the KV cache keeps the longest prefix shared with the previous sequence, as
    `fast_forward.generate` does."""
    start = time.perf_counter()
    _keep_common_prefix(llama, prompt)
    run = _Run(llama, prompt, processor, max_tokens, stop, stopping)
    llama.eval(prompt[llama.n_tokens:])
    run.rows = [_logits(llama, -1)]
    while run.finish is None:
        run.round()
    return Drafted(text=run.text(), tokens=len(run.out), forced=run.forced,
                   drafted=run.drafted, accepted=run.accepted, rounds=run.rounds,
                   finish_reason=run.finish, seconds=time.perf_counter() - start)


class _Run:
    """One generation's state: the tokens written, the logits rows waiting to be read."""

    def __init__(self, llama: llama_cpp.Llama, prompt: list[int],
                 processor: ConstrainedProcessor, max_tokens: int, stop: Sequence[str],
                 stopping: Stopping | None) -> None:
        self.llama, self.prompt, self.processor = llama, prompt, processor
        self.max_tokens, self.stop, self.stopping = max_tokens, stop, stopping
        self._prompt_ids = np.asarray(prompt, dtype=np.intc)  # searched every round
        self.out: list[int] = []
        self.rows: list[np.ndarray] = []
        self.draft: list[int] = []
        self.forced = self.drafted = self.accepted = self.rounds = 0
        self.size = FIRST_DRAFT
        self.finish: str | None = None
        self._stop_at: int | None = None

    def round(self) -> None:
        """Write tokens from the logits rows at hand: one row after the last evaluated
        token, one more per draft token. Stops at the first token that differs from the
        draft, then evaluates what was written but not yet evaluated with a new draft."""
        import llama_cpp as native

        vocab = self.llama._model.vocab
        base = self.llama.n_tokens - len(self.draft)  # the KV cells before the drafts
        written: list[int] = []
        while len(written) < len(self.rows):
            token = self.processor.greedy(self.rows[len(written)])
            if native.llama_vocab_is_eog(vocab, token):
                self._end(base, written, "stop")
                return
            forced = self.processor.advance(token)
            room = self.max_tokens - len(self.out) - len(written)
            piece = [token, *forced][:room]
            written += piece
            self.forced += len(piece) - 1
            reason = self._stops_after(written, cut=len(piece) < 1 + len(forced))
            if reason is not None:
                self._end(base, written, reason)
                return
            if written != self.draft[:len(written)]:
                break
        kept = common_prefix(written, self.draft)
        self.accepted += kept
        self.size = (min(self.size * 2, DRAFT_LIMITS[1]) if kept == len(self.draft)
                     else max(self.size // 2, DRAFT_LIMITS[0]))
        self.out += written
        self._evaluate(base + kept, written[kept:])

    def _evaluate(self, keep: int, pending: list[int]) -> None:
        """Drop the KV cells after `keep`, then evaluate `pending` and a fresh draft in one
        batch with logits at every position from the last pending token on."""
        llama = self.llama
        llama._ctx.kv_cache_seq_rm(-1, keep, -1)
        llama.n_tokens = keep
        self.draft = self._propose()
        head = len(pending) + len(self.draft) - llama.n_batch
        if head > 0:  # a forced run longer than a batch: its head on its own
            llama.eval(pending[:head])
            pending = pending[head:]
        batch = [*pending, *self.draft]
        first = len(pending) - 1  # logits from the last pending token on
        _decode(llama, batch, first)
        self.rows = [_logits(llama, i) for i in range(first, len(batch))]
        self.drafted += len(self.draft)
        self.rounds += 1

    def _propose(self) -> list[int]:
        """Up to `size` tokens that followed the latest n-gram before, cut where the
        grammar would reject one (or at an end-of-generation token) and to the room left."""
        room = self.max_tokens - len(self.out) - 1
        if room <= 0:
            return []
        ids = np.concatenate((self._prompt_ids, np.asarray(self.out, dtype=np.intc)))
        draft = lookup(ids, MAX_NGRAM, min(self.size, room))
        return draft[:self.processor.admitted(draft)]

    def _stops_after(self, written: list[int], cut: bool) -> str | None:
        """Why generation ends after `written`, or None: a stop string, the give-up
        criterion, the grammar complete, the token budget spent."""
        out = [*self.out, *written]
        if self.stop:
            self._stop_at = _first_stop(_text(self.llama, out, self.prompt), self.stop)
            if self._stop_at is not None:
                return "stop"
        if cut:
            return "length"  # max_tokens cut a forced run: a truncation, never a stop
        if self.stopping is not None and self.stopping([*self.prompt, *out], None):
            return "stop"
        if self.processor.stopped:
            return "stop"
        if len(out) >= self.max_tokens:
            return "length"
        return None

    def _end(self, base: int, written: list[int], reason: str) -> None:
        """Finish with `written` added; the KV cache keeps only cells of tokens kept."""
        kept = common_prefix(written, self.draft)
        self.accepted += kept
        self.out += written
        self.llama._ctx.kv_cache_seq_rm(-1, base + kept, -1)
        self.llama.n_tokens = base + kept
        self.finish = reason

    def text(self) -> str:
        text = _text(self.llama, self.out, self.prompt)
        return text if self._stop_at is None else text[:self._stop_at]


def lookup(ids: np.ndarray, max_ngram: int, size: int) -> list[int]:
    """The `size` tokens that followed the latest earlier occurrence of the longest n-gram
    (up to `max_ngram` tokens) that ends `ids`; empty where none occurred."""
    for n in range(min(max_ngram, len(ids) - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], n)
        hits = np.flatnonzero((windows == ids[-n:]).all(axis=1))
        if len(hits):
            start = int(hits[-1]) + n
            return [int(t) for t in ids[start:start + size]]
    return []


def _decode(llama: llama_cpp.Llama, tokens: list[int], first: int) -> None:
    """Evaluate `tokens` after the cached ones in one pass, with logits at `first` and
    every later position only (the output layer is a seventh of the 1.5B's weights)."""
    n_past = llama.n_tokens
    llama._batch.set_batch(batch=tokens, n_past=n_past, logits_all=False)
    for i in range(first, len(tokens)):
        llama._batch.batch.logits[i] = True
    llama._ctx.decode(llama._batch)
    llama.input_ids[n_past:n_past + len(tokens)] = tokens
    llama.n_tokens += len(tokens)


def _logits(llama: llama_cpp.Llama, i: int) -> np.ndarray:
    return np.ctypeslib.as_array(llama._ctx.get_logits_ith(i),
                                 shape=(llama.n_vocab(),)).copy()
