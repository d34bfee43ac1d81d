"""Greedy generation that verifies drafts copied from the prompt (prompt-lookup decoding).

Why: some replies mostly copy their prompt. The filter's goal translation gives an English
goal back word for word and copies names and numbers from any other language; each copied
token sampled alone costs a forward pass (about 30 ms for the default model on 2 cores).
Here, after each token, the tokens that followed its last occurrence in the prompt (and the
reply so far) are proposed as a draft, the draft is evaluated in one batch with the logits
of every position, and the longest part of it that greedy decoding would have written
anyway is kept, plus the token after it. So an English goal of 12 tokens costs two or
three passes instead of 12 (Saxena's prompt-lookup decoding; llama-cpp-python's
`LlamaPromptLookupDecoding` does the same, but needs `logits_all` on the whole model: a
4096 x 151936 float buffer).

Greedy (temperature 0), unconstrained only: the text is the one token-by-token greedy
decoding writes, up to the last bits of a batch's summation order (a near-tie can flip, as
with fast-forward). `LlamaCppLLM.complete(..., lookup=True)` uses it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from localagent.llm.fast_forward import Generated, first_stop, keep_common_prefix

if TYPE_CHECKING:
    import llama_cpp

NGRAM = 2  # the tail looked up: its last 2 tokens (one matching token proposes too often)
FIRST_DRAFT = 4  # tokens proposed after a rejection; doubled after each full acceptance
MAX_DRAFT = 16  # a batch of k tokens costs about k/4 single passes on 2 cores: a rejected
# long draft costs more than it saves, so drafts grow only while they are accepted


def draft(tokens: Sequence[int], *, ngram: int = NGRAM, size: int = MAX_DRAFT) -> list[int]:
    """The tokens that followed the latest earlier occurrence of `tokens`' last `ngram`
    tokens, at most `size`; [] when that tail occurs nowhere before."""
    if len(tokens) <= ngram:
        return []
    tail = list(tokens[-ngram:])
    for start in range(len(tokens) - ngram - 1, -1, -1):
        if list(tokens[start:start + ngram]) == tail:
            return list(tokens[start + ngram:start + ngram + size])
    return []


def generate(llama: llama_cpp.Llama, prompt: list[int], *, max_tokens: int,
             stop: Sequence[str] = ()) -> Generated:
    """Up to `max_tokens` greedy tokens after `prompt` (see module), cut before the first
    of `stop`; `forced` counts the draft tokens accepted."""
    import llama_cpp as native

    start = time.perf_counter()
    keep_common_prefix(llama, prompt)
    llama.eval(prompt[llama.n_tokens:])
    logits = _row(llama, -1)
    vocab = llama._model.vocab
    out: list[int] = []
    accepted = 0
    size = FIRST_DRAFT

    def done(finish: str) -> Generated:
        text = _text(llama, out, prompt)
        hit = first_stop(text, stop)
        return Generated(text=text if hit is None else text[:hit], tokens=len(out),
                         forced=accepted, finish_reason="stop" if hit is not None else finish,
                         seconds=time.perf_counter() - start)

    while len(out) < max_tokens:
        token = int(logits.argmax())
        if native.llama_vocab_is_eog(vocab, token):
            return done("stop")
        out.append(token)
        if len(out) == max_tokens or first_stop(_text(llama, out, prompt), stop) is not None:
            break
        proposal = draft([*prompt, *out], size=min(size, max_tokens - len(out)))
        if not proposal:
            llama.eval([token])
            logits = _row(llama, -1)
            continue
        rows = _eval_rows(llama, [token, *proposal])
        taken = 0
        for guess, row in zip(proposal, rows, strict=False):
            if int(row.argmax()) != guess or native.llama_vocab_is_eog(vocab, guess):
                break
            taken += 1
        out += proposal[:taken]
        accepted += taken
        size = min(MAX_DRAFT, size * 2) if taken == len(proposal) else FIRST_DRAFT
        _drop_after(llama, llama.n_tokens - len(proposal) + taken)
        logits = rows[taken]
        if taken and first_stop(_text(llama, out, prompt), stop) is not None:
            break
    return done("length")


def _row(llama: llama_cpp.Llama, i: int) -> Any:
    import numpy as np

    return np.ctypeslib.as_array(llama._ctx.get_logits_ith(i), shape=(llama.n_vocab(),))


def _eval_rows(llama: llama_cpp.Llama, tokens: list[int]) -> list[Any]:
    """Evaluate `tokens` as one batch after the sequence in memory; the logits after each
    of them (copies: the next batch overwrites llama.cpp's buffer)."""
    n_past = llama.n_tokens
    llama._ctx.kv_cache_seq_rm(-1, n_past, -1)
    llama._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[n_past:n_past + len(tokens)] = tokens
    llama.n_tokens = n_past + len(tokens)
    return [_row(llama, i).copy() for i in range(len(tokens))]


def _drop_after(llama: llama_cpp.Llama, keep: int) -> None:
    """Forget the rejected draft tokens' KV cells."""
    llama._ctx.kv_cache_seq_rm(-1, keep, -1)
    llama.n_tokens = keep


def _text(llama: llama_cpp.Llama, out: list[int], prompt: list[int]) -> str:
    return llama.detokenize(out, prev_tokens=prompt).decode("utf-8", errors="ignore")
