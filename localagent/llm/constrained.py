"""Constraints compiled to llguidance matchers, applied as a llama.cpp logits processor.

Why llguidance directly and not an Outlines generator: Outlines' `LlamaCpp.generate`
resets the model after every call and throws the prompt cache away (DESIGN.md Trap 3).
We compile a `Constraint` once per (constraint, tokenizer) into an `LLMatcher`, hand each
generation a cheap copy wrapped in a `ConstrainedProcessor`, and the backend passes it to
`Llama.create_completion(logits_processor=...)` itself, so the KV cache survives.

Why the processor records its own failures: llama-cpp-python calls logits processors from
a ctypes callback, where an exception is printed and swallowed and generation simply
continues unconstrained (Trap 1). The processor counts its calls and keeps the first
exception; `check_in_force` turns either symptom into a `ConstraintError` after the call.

`matches(constraint, text)` checks a finished text against the same grammar without a
model, through a byte-level tokenizer: planners and scripted-LLM tests use it.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from localagent.constraint import Constraint
from localagent.errors import ConstraintError

if TYPE_CHECKING:
    import llama_cpp
    import llguidance

__all__ = [
    "CompileStats",
    "ConstrainedProcessor",
    "compile_stats",
    "grammar_for",
    "match_error",
    "matches",
    "processor_for",
    "tokenizer_for",
]

_LOCK = threading.Lock()
# fingerprint -> (LLTokenizer, model kept alive, ids never sampled under a grammar)
_TOKENIZERS: dict[str, tuple[Any, Any, np.ndarray]] = {}
_MATCHERS: dict[tuple[str, str], Any] = {}  # (constraint key, fingerprint) -> pristine LLMatcher
_BYTE_TOKENIZER: list[Any] = []


@dataclass
class CompileStats:
    """Process-wide counters, so tests can check "compiled once" without timing anything."""

    grammar_compilations: int = 0
    tokenizer_builds: int = 0
    cache_hits: int = 0


_STATS = CompileStats()


def compile_stats() -> CompileStats:
    """A snapshot of the compile counters."""
    return CompileStats(**vars(_STATS))


def grammar_for(constraint: Constraint) -> str:
    """The llguidance grammar text for a `Constraint` (not yet checked)."""
    import llguidance

    if constraint.kind == "json_schema":
        # Compact, fixed separators: no free whitespace for a small model to loop in (Trap 2).
        return llguidance.LLMatcher.grammar_from_json_schema(
            constraint.source,
            defaults={"whitespace_flexible": False, "item_separator": ", ",
                      "key_separator": ": "},
        )
    if constraint.kind == "lark":
        return llguidance.LLMatcher.grammar_from_lark(constraint.source)
    if constraint.kind == "regex":
        return llguidance.LLMatcher.grammar_from_regex(constraint.source)
    raise ConstraintError(f"unknown constraint kind {constraint.kind!r}")


def _compile(constraint: Constraint, tokenizer: llguidance.LLTokenizer) -> llguidance.LLMatcher:
    import llguidance

    grammar = grammar_for(constraint)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, tokenizer)
    if is_error:
        raise ConstraintError(
            f"constraint {constraint.name or constraint.kind} does not compile: {messages[0]}",
            hint="this is a bug in the grammar builder or a hostile tool schema",
        )
    matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
    if matcher.is_error():
        raise ConstraintError(f"constraint {constraint.name or constraint.kind} does not "
                              f"compile: {matcher.get_error()}")
    _STATS.grammar_compilations += 1
    return matcher


def _fingerprint(llama: llama_cpp.Llama) -> str:
    """Identifies a tokenizer: the model file plus vocabulary size and special ids."""
    payload = f"{llama.model_path}\0{llama.n_vocab()}\0{llama.token_eos()}\0{llama.token_bos()}"
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _stop_tokens(llama: llama_cpp.Llama) -> list[int]:
    """EOS plus end-of-turn: either one ends a llama.cpp completion."""
    import llama_cpp

    vocab = llama._model.vocab
    ids = [llama_cpp.llama_vocab_eos(vocab), llama_cpp.llama_vocab_eot(vocab)]
    return sorted({i for i in ids if i >= 0})


def tokenizer_for(llama: llama_cpp.Llama) -> tuple[str, llguidance.LLTokenizer]:
    """The llguidance tokenizer of a loaded model, built once per model file (~1 s).

    The llguidance tokenizer calls back into llama.cpp's tokenizer through the model's
    vocab pointer, so the cache also keeps that model object alive.
    """
    # Keyed by the model object too: a closed or garbage-collected Llama frees its vocab,
    # and a tokenizer (or matcher) built on it would then read freed memory (a segfault
    # seen when a second Llama of the same file reused the first one's cache entry).
    # The cache holds the model object, so its id cannot be reused while the entry lives.
    key = f"{_fingerprint(llama)}:{id(llama._model)}"
    with _LOCK:
        _forget_closed_models()
        if key not in _TOKENIZERS or _TOKENIZERS[key][1] is not llama._model:
            model = llama._model
            with warnings.catch_warnings():  # one deprecation warning per vocab entry
                warnings.simplefilter("ignore", DeprecationWarning)
                text_tokenizer = _TextTokenizer(llama, _stop_tokens(llama))
            _TOKENIZERS[key] = (_lltokenizer(text_tokenizer), model,
                                text_tokenizer.never_sampled)
            _STATS.tokenizer_builds += 1
        return key, _TOKENIZERS[key][0]


def _never_sampled(key: str) -> np.ndarray:
    with _LOCK:
        return _TOKENIZERS[key][2]


class _TextTokenizer:
    """llama.cpp's tokenizer for llguidance, with special tokens read as plain text.

    Why not `llguidance.llamacpp.lltokenizer_from_vocab`: it tokenizes forced bytes with
    special tokens parsed, so a grammar that forces "<tool_call>" (no other choice left)
    offered Qwen's single `<tool_call>` token, which the same matcher then rejected as
    special ("token doesn't satisfy the grammar"). Here forced text tokenizes as text.

    The same scan of the vocabulary collects `never_sampled`: the control tokens and the
    user-defined markup tokens (`<tool_call>`), but end-of-sequence. Grammars here are
    written in text, so no such token is ever wanted, and llguidance's mask could still
    let one through. Other user-defined tokens are text and stay: Gemma's newline and
    whitespace tokens are user-defined, and blocking them left a grammar that required
    "\n" with no token to write it (every Gemma ReAct step stopped mid-line).
    """

    def __init__(self, llama: llama_cpp.Llama, eos: list[int]) -> None:
        import llama_cpp

        vocab = llama._model.vocab
        buffer = ctypes.create_string_buffer(16 * 1024 + 1)
        self.tokens: list[bytes] = []
        for token in range(llama.n_vocab()):
            n = llama_cpp.llama_token_to_piece(vocab, token, buffer, 16 * 1024, 0, True)
            piece = bytes(buffer[:max(n, 0)])
            attr = llama_cpp.llama_token_get_attr(vocab, token)
            control = bool(attr & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL)
            markup = bool(attr & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED) and (
                piece.startswith(b"<") and piece.endswith(b">"))
            if control or markup:
                piece = b"\xff" + piece  # llguidance's mark of a special token
            self.tokens.append(piece)
        self.eos = eos
        self.eos_token_id = eos[0] if eos else llama.token_eos()
        self.bos_token_id = llama.token_bos()
        self.special_token_ids = [i for i, t in enumerate(self.tokens) if t[:1] == b"\xff"]
        self._special = set(self.special_token_ids)
        self.never_sampled = np.asarray(
            [i for i in self.special_token_ids if i not in eos], dtype=np.int64)
        self._llama = llama

    def __call__(self, text: bytes) -> list[int]:
        ids = list(self._llama.tokenize(text, add_bos=False, special=False))
        if not self._special.intersection(ids):
            return ids
        out: list[int] = []  # llama.cpp matches user-defined tokens even without `special`
        for i in ids:
            if i in self._special:
                piece = self.tokens[i][1:]
                out += self(piece[:1]) + self(piece[1:])
            else:
                out.append(i)
        return out


def _lltokenizer(text_tokenizer: _TextTokenizer) -> llguidance.LLTokenizer:
    import llguidance
    from llguidance._tokenizer import TokenizerWrapper

    eos = text_tokenizer.eos
    return llguidance.LLTokenizer(TokenizerWrapper(text_tokenizer), eos_token=eos or None)


def _forget_closed_models() -> None:
    """Drop tokenizers and compiled matchers of models that were closed (freed vocab)."""
    dead = {k for k, (_, model, _) in _TOKENIZERS.items() if getattr(model, "model", None) is None}
    for k in dead:
        del _TOKENIZERS[k]
    for cache_key in [c for c in _MATCHERS if c[1] in dead]:
        del _MATCHERS[cache_key]


def processor_for(constraint: Constraint, llama: llama_cpp.Llama) -> ConstrainedProcessor:
    """A fresh processor for one generation; the grammar is compiled once per process.

    Raises `ConstraintError` when the constraint does not compile.
    """
    key, tokenizer = tokenizer_for(llama)
    cache_key = (constraint.key, key)
    with _LOCK:
        pristine = _MATCHERS.get(cache_key)
        if pristine is None:
            pristine = _compile(constraint, tokenizer)
            _MATCHERS[cache_key] = pristine
        else:
            _STATS.cache_hits += 1
        matcher = pristine.deep_copy()
    eos = list(tokenizer.eos_tokens)
    return ConstrainedProcessor(matcher, tokenizer.vocab_size, constraint, eos_ids=eos,
                                blocked=_never_sampled(key))


class ConstrainedProcessor:
    """A llama-cpp-python `LogitsProcessor` that masks scores with an llguidance matcher.

    llama-cpp-python calls it with the whole sequence so far (prompt included) and the
    scores of the next position. The first call after `reset` remembers where the prompt
    ends; later calls feed the newly generated tokens to the matcher before masking.
    """

    def __init__(self, matcher: Any, vocab_size: int, constraint: Constraint,
                 *, eos_ids: list[int] | None = None,
                 blocked: np.ndarray | None = None) -> None:
        self._matcher = matcher
        self._eos = list(eos_ids or [])
        self._blocked = blocked if blocked is not None else np.zeros(0, dtype=np.int64)
        self._blocked_set = frozenset(int(i) for i in self._blocked)
        self._vocab_size = vocab_size
        self.constraint = constraint
        self._bitmask = np.full((vocab_size + 31) // 32, -1, dtype=np.int32)
        self._prompt_len: int | None = None
        self._consumed = 0
        self.calls = 0
        self.forced = 0  # tokens fed by `advance` as forced, never masked one by one
        self.seconds = 0.0  # time spent masking, for benchmarks
        self.error: BaseException | None = None

    def reset(self) -> None:
        """Start a new generation: matcher back to the start (the model keeps its KV cache)."""
        self._matcher.reset()
        self._prompt_len = None
        self._consumed = 0
        self.calls = 0
        self.forced = 0
        self.seconds = 0.0
        self.error = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        self.calls += 1
        start = time.perf_counter()
        try:
            return self._mask(input_ids, scores)
        except BaseException as exc:  # noqa: BLE001 - the ctypes callback would swallow it
            if self.error is None:
                self.error = exc
            return _only(scores, self._eos)
        finally:
            self.seconds += time.perf_counter() - start

    def _mask(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._prompt_len is None:
            self._prompt_len = len(input_ids)
        new = input_ids[self._prompt_len + self._consumed:]
        if len(new):
            tokens = [int(t) for t in new]
            if not self._matcher.consume_tokens(tokens):
                raise ConstraintError(f"generated token rejected by the grammar: "
                                      f"{self._matcher.get_error()}")
            self._consumed += len(tokens)
        return self._masked(scores)

    def greedy(self, scores: np.ndarray) -> int:
        """The token greedy decoding writes after the tokens fed so far: the argmax of
        `scores` under the mask (`speculative.py` reads logits rows itself)."""
        self.calls += 1
        start = time.perf_counter()
        try:
            return int(np.argmax(self._masked(scores)))
        finally:
            self.seconds += time.perf_counter() - start

    def admitted(self, tokens: list[int]) -> int:
        """How many of `tokens`, from the first, the grammar admits next without feeding
        them; an end-of-generation or blocked token ends the run."""
        n = int(self._matcher.validate_tokens(tokens)) if tokens else 0
        for i, token in enumerate(tokens[:n]):
            if token in self._eos or token in self._blocked_set:
                return i
        return n

    def _masked(self, scores: np.ndarray) -> np.ndarray:
        if self._matcher.is_error():
            raise ConstraintError(f"grammar matcher failed: {self._matcher.get_error()}")
        n = min(len(scores), self._vocab_size)
        allowed = self._allowed()[:n]
        out = np.full(len(scores), -np.inf, dtype=scores.dtype)
        np.copyto(out[:n], scores[:n], where=allowed.view(bool))
        out[self._blocked[self._blocked < n]] = -np.inf
        if not np.isfinite(out).any():  # only a control token was allowed: end instead
            return _only(scores, self._eos)
        return out

    def advance(self, token: int) -> list[int]:
        """Feed a sampled `token` and return the tokens the grammar forces next, fed too
        (the caller evaluates them with `token` in one batch; see `fast_forward.py`).

        A token counts as forced where the mask admits that one token only, so the text
        and its tokenization are exactly what token-by-token decoding writes (not
        llguidance's `compute_ff_tokens`, the canonical tokenization of the forced bytes,
        which can split a span otherwise). The next call's scores need no catching up:
        the matcher has seen every token up to the end of the batch."""
        if not self._matcher.consume_token(token):
            raise ConstraintError(f"generated token rejected by the grammar: "
                                  f"{self._matcher.get_error()}")
        self._consumed += 1
        more: list[int] = []
        while not self._matcher.is_stopped():
            only = self._only_allowed()
            if only is None or only in self._eos:
                break
            if not self._matcher.consume_token(only):
                raise ConstraintError(f"forced token rejected by the grammar: "
                                      f"{self._matcher.get_error()}")
            more.append(only)
        self._consumed += len(more)
        self.forced += len(more)
        return more

    def _allowed(self) -> np.ndarray:
        """The matcher's mask for the next token: one 0/1 byte per vocabulary id."""
        self._matcher.unsafe_compute_mask_ptr(
            self._bitmask.ctypes.data_as(ctypes.c_void_p).value, self._bitmask.nbytes)
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")
        return bits[:self._vocab_size]

    def _only_allowed(self) -> int | None:
        """The one token the mask admits next (blocked ids aside), or None."""
        allowed = self._allowed()
        allowed[self._blocked[self._blocked < len(allowed)]] = 0
        ids = np.flatnonzero(allowed)
        return int(ids[0]) if len(ids) == 1 else None

    @property
    def stopped(self) -> bool:
        """Whether the grammar admits nothing more (the text is complete)."""
        return bool(self._matcher.is_stopped())

    @property
    def accepting(self) -> bool:
        """Whether the text generated so far is a complete match of the grammar."""
        return bool(self._matcher.is_accepting())

    def check_in_force(self, completion_tokens: int) -> None:
        """Raise `ConstraintError` if the constraint was not really applied (Trap 1)."""
        name = self.constraint.name or self.constraint.kind
        if self.error is not None:
            raise ConstraintError(
                f"constraint {name} failed inside the logits processor: {self.error!r}")
        if completion_tokens > 0 and self.calls == 0:
            raise ConstraintError(
                f"constraint {name} was not in force: {completion_tokens} tokens generated "
                "but the logits processor never ran",
                hint="pass the processor as logits_processor to create_completion")
        if completion_tokens > self.calls + self.forced:
            raise ConstraintError(
                f"constraint {name} masked only {self.calls} of {completion_tokens} tokens"
                f" ({self.forced} forced)")


def _only(scores: np.ndarray, ids: list[int]) -> np.ndarray:
    """Scores that let only `ids` through (all -inf when empty): stops a broken run fast."""
    out = np.full_like(scores, -np.inf)
    for i in ids:
        if 0 <= i < len(out):
            out[i] = scores[i]
    return out


# --- model-free validation ----------------------------------------------------------------


class _ByteTokenizer:
    """One token per byte plus an EOS: lets a matcher check text without a model."""

    eos_token_id = 256
    bos_token_id = None
    special_token_ids: ClassVar[list[int]] = [256]

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"\xff<eos>"]

    def __call__(self, text: bytes | str) -> list[int]:
        return list(text.encode() if isinstance(text, str) else text)


def _byte_tokenizer() -> llguidance.LLTokenizer:
    import llguidance

    with _LOCK:
        if not _BYTE_TOKENIZER:
            wrapper = llguidance.TokenizerWrapper(_ByteTokenizer())
            _BYTE_TOKENIZER.append(llguidance.LLTokenizer(wrapper, slices=[]))
        return _BYTE_TOKENIZER[0]


def match_error(constraint: Constraint, text: str) -> str | None:
    """None when `text` is a complete match of `constraint`, else why not (for messages)."""
    tokenizer = _byte_tokenizer()
    cache_key = (constraint.key, "bytes")
    with _LOCK:
        pristine = _MATCHERS.get(cache_key)
        if pristine is None:
            pristine = _compile(constraint, tokenizer)
            _MATCHERS[cache_key] = pristine
        matcher = pristine.deep_copy()
    data = list(text.encode())
    consumed = matcher.try_consume_tokens(data)
    if consumed < len(data):
        return f"text departs from the grammar at byte {consumed}: {text.encode()[consumed:consumed + 20]!r}"
    if not matcher.is_accepting():
        return "text is incomplete (the grammar expects more)"
    return None


def matches(constraint: Constraint, text: str) -> bool:
    """Whether `text` is a complete, valid output for `constraint` (no model needed)."""
    return match_error(constraint, text) is None
