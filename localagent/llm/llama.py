"""The llama.cpp backend: `LlamaCppLLM` wraps one `llama_cpp.Llama`.

Why not go through Outlines' model wrapper: it resets the model after every call, which
throws the KV cache away (DESIGN.md, trap 3). We call `Llama.create_completion` ourselves
with pre-tokenized prompts, so llama-cpp-python's `generate` keeps the longest common
prefix with the previous call in the cache, and a constraint is applied as a logits
processor that is compiled once and only reset per call.

We measure, not guess, how many prompt tokens were evaluated: `generate` evaluates the
un-cached suffix of the prompt in its first `eval` call, so we count that call's tokens
(plus the tokens evaluated before it to save a prompt-cache checkpoint).

Across processes, `prompt_cache.py` keeps KV states of prompt prefixes on disk: before
generating, a prompt of MIN_PREFIX tokens or more may restore a stored prefix (llama.cpp's
per-sequence state, then `generate`'s own prefix match keeps the shared part) and save
the prefixes `plan_use` picks. `prompt_cache` off (`LOCALAGENT_PROMPT_CACHE=0`) leaves
generation exactly as without it.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localagent.constraint import Constraint
from localagent.errors import ModelFileError, UsageError
from localagent.llm.base import LLM, Completion, GiveUp, Message, ModelInfo, NextTokens, Usage
from localagent.llm.catalog import CatalogEntry
from localagent.llm.chat_template import TEMPLATE_KEY, ChatTemplate
from localagent.llm.prompt_cache import (
    MIN_PREFIX,
    CacheIdentity,
    PromptCache,
    cache_root,
    common_prefix,
    file_sha256,
    llama_build,
    plan_use,
)

if TYPE_CHECKING:
    import llama_cpp


class ContextLengthError(UsageError):
    """A prompt (plus the tokens asked for) that does not fit the context window."""


class LlamaCppLLM(LLM):
    """A GGUF model run by llama.cpp; thread-safe (one call at a time per model)."""

    def __init__(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        verbose: bool = False,
        entry: CatalogEntry | None = None,
        prompt_cache: PromptCache | bool | None = None,
        fast_forward: bool | None = None,
        drafts: bool | None = None,
    ) -> None:
        """`prompt_cache`: a `PromptCache`, False for none, None for the settings'
        (`prompt_cache`, `prompt_cache_bytes`; on by default, under `$LOCALAGENT_HOME`).
        `fast_forward`: evaluate grammar-forced tokens in one batch (`fast_forward.py`)
        under every constraint (True) or none (False); None for the setting of that name,
        whose default (auto, also None) fast-forwards greedy calls under a constraint
        marked `Constraint.fast_forward`."""
        self.path = Path(path)
        self.temperature = temperature
        self.seed = seed
        self._lock = threading.RLock()
        self._llama = _open_llama(self.path, n_ctx=n_ctx, n_threads=n_threads, seed=seed,
                                  verbose=verbose)
        self._eval_sizes: list[int] = []
        self._install_eval_counter()
        self._template = self._read_template()
        has_template = self._template.source is not None
        chat_format = (entry.chat_format if entry else "gguf") if has_template else None
        self.info = ModelInfo(
            name=name or self.path.stem,
            path=str(self.path),
            chat_format=chat_format,
            # llama.cpp may pad the context; llama-cpp-python's token buffer has the size asked
            n_ctx=min(n_ctx, self._llama.n_ctx()),
            supports_tools=self._template.supports_tools,
        )
        self._entry = entry
        self._cache_choice = prompt_cache
        self._prompt_cache: PromptCache | None = None
        self._cache_ready = False
        self._skip_disk = False
        self._aside_state: _KVState | None = None
        if fast_forward is None:
            from localagent.config import load_settings

            fast_forward = load_settings().value("fast_forward")
        self.fast_forward: bool | None = fast_forward
        if drafts is None:
            from localagent.config import load_settings

            drafts = load_settings().value("drafts")
        self.drafts = drafts
        # the latest drafted generations' `Drafted`, in order (bounded: a server runs long)
        self.draft_stats: collections.deque[Any] = collections.deque(maxlen=1000)

    @property
    def llama(self) -> llama_cpp.Llama:
        """The underlying `llama_cpp.Llama` (for compiling constraints against its vocab)."""
        return self._llama

    @property
    def chat_template(self) -> str | None:
        return self._template.source

    def tokenize(self, text: str) -> list[int]:
        """Tokens as `complete()` feeds them: special tokens parsed, BOS where the model
        adds one (never twice, e.g. when a chat template already wrote it)."""
        with self._lock:
            tokens = self._llama.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        bos = self._llama.token_bos()
        if len(tokens) >= 2 and tokens[0] == tokens[1] == bos:
            tokens = tokens[1:]
        return list(tokens)

    def count_tokens(self, text: str) -> int:
        """Equals `usage.prompt_tokens` of `complete(text)`."""
        return len(self.tokenize(text))

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self._llama.detokenize(list(tokens)).decode("utf-8", errors="replace")

    def cached_tokens(self) -> list[int]:
        """The tokens whose keys and values are in the KV cache now."""
        with self._lock:
            return [int(t) for t in self._llama._input_ids]

    def reset_cache(self, *, keep_disk: bool = False) -> None:
        """Forget the KV cache: the next call evaluates its whole prompt, or, with
        `keep_disk`, all but what the disk prompt cache restores (as a new process would)."""
        with self._lock:
            self._llama.reset()
            self._skip_disk = not keep_disk

    @property
    def prompt_cache(self) -> PromptCache | None:
        """The disk prompt cache in use (None when off), opened on first use."""
        with self._lock:
            if not self._cache_ready:
                self._prompt_cache = self._open_prompt_cache()
                self._cache_ready = True
            return self._prompt_cache

    def set_prompt_cache(self, cache: PromptCache | None) -> None:
        """Use `cache` (None: none) from the next call on."""
        with self._lock:
            self._prompt_cache, self._cache_ready = cache, True

    def cache_identity(self) -> CacheIdentity:
        """What a stored KV state of this model must match: the GGUF's sha256 (the
        catalog's, or computed once for a path), the llama.cpp build, the context size and
        the weight buffer layout."""
        if self._entry is not None:
            sha = self._entry.sha256
        else:
            sha = file_sha256(self.path, cache_root())
        context = f"n_ctx={self._llama.n_ctx()} extra_bufts={int(use_extra_buffers())}"
        return CacheIdentity(model_sha256=sha, build=llama_build(), context=context)

    def format_chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        return self._template.render(messages, tools=tools,
                                     add_generation_prompt=add_generation_prompt)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float | None = None,
        seed: int | None = None,
        constraint: Constraint | None = None,
        give_up: GiveUp | None = None,
    ) -> Completion:
        with self._lock:
            tokens = self.tokenize(prompt)
            self._check_fits(len(tokens))
            processor = self._processor(constraint)
            # never past the token buffer (llama.cpp may pad its context beyond it)
            max_tokens = max(1, min(max_tokens, self.info.n_ctx - len(tokens)))
            kwargs = _completion_kwargs(
                max_tokens=max_tokens, stop=stop,
                temperature=self.temperature if temperature is None else temperature,
                seed=self.seed if seed is None else seed, processor=processor,
                stopping=self._give_up_criterion(give_up, len(tokens)))
            start = time.perf_counter()
            loaded, evaluated = self._use_prompt_cache(tokens)
            self._eval_sizes.clear()
            if processor is not None and self._drafts(kwargs["temperature"]):
                text, n_completion, finish = self._generate_drafted(tokens, processor, kwargs)
            elif processor is not None and self._fast_forward(constraint, kwargs["temperature"]):
                text, n_completion, finish = self._generate_forced(tokens, processor, kwargs)
            else:
                text, n_completion, finish = _read_completion(
                    self._llama.create_completion(tokens, **kwargs))
            seconds = time.perf_counter() - start
            evaluated += self._eval_sizes[0] if self._eval_sizes else 0
        if processor is not None:
            processor.check_in_force(n_completion)
        usage = _usage(len(tokens), loaded, evaluated, seconds, n_completion)
        return Completion(text=text, usage=usage, finish_reason=finish, prompt=prompt)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Calls inside run on a KV state of their own: the cached tokens are copied out
        first (llama.cpp's sequence state, about 12 KiB a token: milliseconds) and put back
        after, so the next planner call reuses its prefix as if nothing ran between. The
        side calls' own state is kept for the next `aside`, so consecutive side calls with
        one prompt prefix (the translation's few-shot prompt) evaluate only what differs."""
        with self._lock:
            main = _kv_state(self._llama)
            _kv_put(self._llama, self._aside_state)
            try:
                yield
            finally:
                self._aside_state = _kv_state(self._llama)
                _kv_put(self._llama, main)

    def next_tokens(self, prompt: str, *, top_k: int = 64) -> NextTokens:
        """The `top_k` likeliest first tokens after `prompt` with their softmax
        probabilities (temperature 1, no processor), read from the logits of the prompt's
        last token. The prompt is evaluated as for `complete` (shared prefix and disk cache
        reused), and stays in the KV cache for the call that follows."""
        import numpy as np

        with self._lock:
            tokens = self.tokenize(prompt)
            self._check_fits(len(tokens))
            start = time.perf_counter()
            loaded, evaluated = self._use_prompt_cache(tokens)
            llama = self._llama
            have = min(llama.n_tokens, common_prefix(llama._input_ids.tolist(), tokens),
                       len(tokens) - 1)  # the last token again, for fresh logits
            _kv_truncate(llama, have)
            llama.eval(tokens[have:])
            evaluated += len(tokens) - have
            logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1),
                                           shape=(llama.n_vocab(),)).astype(np.float64)
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            best = np.argsort(-probs)[:top_k]
            choices = tuple((llama.detokenize([int(i)], special=True).decode("utf-8", "replace"),
                             float(probs[i])) for i in best)
            seconds = time.perf_counter() - start
        return NextTokens(choices=choices, usage=_usage(len(tokens), loaded, evaluated, seconds))

    def close(self) -> None:
        with self._lock:
            self._llama.close()

    # --- internals -----------------------------------------------------------------

    def _generate_forced(self, tokens: list[int], processor: Any,
                         kwargs: dict[str, Any]) -> tuple[str, int, str]:
        from localagent.llm.fast_forward import generate

        stopping = kwargs.get("stopping_criteria")
        out = generate(self._llama, tokens, processor, max_tokens=kwargs["max_tokens"],
                       temperature=kwargs["temperature"], seed=kwargs["seed"],
                       stop=kwargs["stop"], stopping=stopping[0] if stopping else None)
        return out.text, out.tokens, out.finish_reason

    def _generate_drafted(self, tokens: list[int], processor: Any,
                          kwargs: dict[str, Any]) -> tuple[str, int, str]:
        from localagent.llm.speculative import generate_drafted

        stopping = kwargs.get("stopping_criteria")
        out = generate_drafted(self._llama, tokens, processor, max_tokens=kwargs["max_tokens"],
                               stop=kwargs["stop"], stopping=stopping[0] if stopping else None)
        self.draft_stats.append(out)
        return out.text, out.tokens, out.finish_reason

    def _drafts(self, temperature: float) -> bool:
        """Whether this call drafts from the prompt (`speculative.py`): greedy calls under a
        grammar only, where the `drafts` setting allows. Not free calls (the raw baseline):
        measured, drafts did not make them faster (BFCL raw 8.6 s a case either way) and
        batch logits flipped two greedy near-ties, so the baseline would no longer be the
        model's plain greedy output (docs/BENCHMARKS.md, stop 56)."""
        return bool(self.drafts) and temperature == 0

    def _open_prompt_cache(self) -> PromptCache | None:
        choice = self._cache_choice
        if isinstance(choice, PromptCache) or choice is False:
            return choice or None
        from localagent.config import load_settings

        settings = load_settings()
        if not settings.value("prompt_cache") and choice is not True:
            return None
        return PromptCache(cache_root(settings.value("home")), self.cache_identity(),
                           settings.value("prompt_cache_bytes"))

    def _use_prompt_cache(self, tokens: list[int]) -> tuple[int, int]:
        """Restore and save prompt prefixes as `plan_use` decides, before `generate` runs;
        (tokens restored from disk, tokens evaluated here). Generation then evaluates only
        what follows the state in memory."""
        skip, self._skip_disk = self._skip_disk, False
        prefix = tokens[:-1]  # llama.cpp evaluates the last token anyway (fresh logits)
        if skip or len(prefix) < MIN_PREFIX:
            return 0, 0
        cache = self.prompt_cache
        if cache is None:
            return 0, 0
        llama = self._llama
        entries = cache.entries()
        plan = plan_use(prefix, common_prefix(llama._input_ids.tolist(), prefix), entries)
        loaded = 0
        if plan.load is not None:
            payload = cache.load(plan.load)
            if payload is not None and _kv_restore(llama, payload, plan.load.tokens):
                loaded = plan.start
            else:  # corrupt or unusable: deleted by load(); decide again without it
                llama.reset()
                rest = [e for e in entries if e.path != plan.load.path]
                plan = plan_use(prefix, 0, rest)
                plan = type(plan)(None, 0, plan.checkpoints)
        if not plan.checkpoints:
            return loaded, 0
        have = min(llama.n_tokens, common_prefix(llama._input_ids.tolist(), prefix))
        _kv_truncate(llama, have)
        evaluated = 0
        for point in plan.checkpoints:
            if point < have:
                continue
            llama.eval(prefix[have:point])
            evaluated += point - have
            have = point
            cache.save(prefix[:point], _kv_snapshot(llama))
        return loaded, evaluated

    def _install_eval_counter(self) -> None:
        """Record the size of every `eval` batch; `generate` looks the method up on the
        instance, so this sees the prompt suffix it really evaluates."""
        original = self._llama.eval

        def counting_eval(tokens: Sequence[int]) -> None:
            self._eval_sizes.append(len(tokens))
            original(tokens)

        self._llama.eval = counting_eval  # type: ignore[method-assign]

    def _read_template(self) -> ChatTemplate:
        llama = self._llama
        meta = llama.metadata or {}

        def text(token_id: int) -> str:
            return llama._model.token_get_text(token_id) if token_id != -1 else ""

        return ChatTemplate(meta.get(TEMPLATE_KEY) or None,
                            bos_token=text(llama.token_bos()), eos_token=text(llama.token_eos()))

    def _check_fits(self, n_prompt: int) -> None:
        n_ctx = self.info.n_ctx
        if n_prompt + 1 >= n_ctx:
            raise ContextLengthError(
                f"the prompt has {n_prompt} tokens; the context window holds {n_ctx}",
                hint="shorten the prompt or load the model with a larger n_ctx")

    def _give_up_criterion(self, give_up: GiveUp | None, n_prompt: int) -> Any:
        """A llama.cpp stopping criterion calling `give_up` on the text generated so far."""
        if give_up is None:
            return None
        llama = self._llama

        def criterion(input_ids: Any, logits: Any) -> bool:
            text = llama.detokenize(list(input_ids[n_prompt:])).decode("utf-8", "ignore")
            return give_up(text)

        return criterion

    def _fast_forward(self, constraint: Constraint | None, temperature: float) -> bool:
        """Whether to fast-forward this call: as set, or (auto) for a greedy call under a
        constraint marked for it. Greedy text is the same either way; a seeded sample is
        not the same sample (forced tokens draw no random number), so sampled calls keep
        the draws they had (docs/BENCHMARKS.md)."""
        if constraint is None:
            return False
        if self.fast_forward is None:
            return constraint.fast_forward and temperature == 0
        return self.fast_forward

    def _processor(self, constraint: Constraint | None) -> Any:
        if constraint is None:
            return None
        from localagent.llm.constrained import processor_for

        processor = processor_for(constraint, self._llama)
        processor.reset()
        return processor


def _kv_snapshot(llama: llama_cpp.Llama) -> bytes:
    """llama.cpp's state of sequence 0 (its KV cells), as `llama_state_seq_get_data` writes
    it; `Llama.save_state` would also copy the n_batch x n_vocab logits buffer."""
    import ctypes

    import llama_cpp as native

    size = native.llama_state_seq_get_size(llama.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = native.llama_state_seq_get_data(llama.ctx, buffer, size, 0)
    if not 0 < written <= size:
        raise RuntimeError("llama.cpp could not copy the KV state")
    return ctypes.string_at(buffer, written)


def _kv_restore(llama: llama_cpp.Llama, payload: bytes, tokens: Sequence[int]) -> bool:
    """Put a saved sequence state back and tell `Llama` which tokens it holds (as
    `Llama.load_state` does); False, with the memory cleared, when llama.cpp rejects it
    (another model shape) or it does not hold exactly `tokens`."""
    import ctypes

    import llama_cpp as native

    llama.reset()
    llama._ctx.kv_cache_seq_rm(0, 0, -1)
    buffer = (ctypes.c_uint8 * len(payload)).from_buffer_copy(payload)
    read = native.llama_state_seq_set_data(llama.ctx, buffer, len(payload), 0)
    memory = native.llama_get_memory(llama.ctx)
    last = native.llama_memory_seq_pos_max(memory, 0) if memory is not None else -2
    if read == 0 or last != len(tokens) - 1:
        llama._ctx.kv_cache_seq_rm(0, 0, -1)
        return False
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    llama._requires_eval = True  # logits were not restored: decode before sampling
    return True


@dataclass(frozen=True)
class _KVState:
    """The tokens in the KV cache and llama.cpp's state for them (`_kv_snapshot`)."""

    tokens: tuple[int, ...]
    payload: bytes


def _kv_state(llama: llama_cpp.Llama) -> _KVState | None:
    """What the KV cache holds now (None: nothing)."""
    if llama.n_tokens == 0:
        return None
    tokens = tuple(int(t) for t in llama.input_ids[: llama.n_tokens])
    return _KVState(tokens, _kv_snapshot(llama))


def _kv_put(llama: llama_cpp.Llama, state: _KVState | None) -> None:
    """Make the KV cache hold `state` (None: nothing); a state llama.cpp rejects leaves it
    empty (`_kv_restore`), which costs only a re-evaluation."""
    if state is None:
        _kv_truncate(llama, 0)
    else:
        _kv_restore(llama, state.payload, state.tokens)


def _kv_truncate(llama: llama_cpp.Llama, n: int) -> None:
    """Keep the first `n` tokens of the KV cache (as `generate` does on a prefix match), so
    a snapshot holds exactly the prefix it is saved for."""
    llama._ctx.kv_cache_seq_rm(0, n, -1)
    if llama.n_tokens > n:
        llama.n_tokens = n
        llama._requires_eval = True


def _usage(n_prompt: int, loaded: int, evaluated: int, seconds: float,
           completion_tokens: int = 0) -> Usage:
    """One call's usage: of `n_prompt` prompt tokens, `evaluated` were computed here and
    the rest reused, `loaded` of them restored from the disk prompt cache."""
    reused = n_prompt - evaluated
    return Usage(calls=1, prompt_tokens=n_prompt, prompt_tokens_reused=reused,
                 prompt_tokens_loaded=min(loaded, reused), completion_tokens=completion_tokens,
                 seconds=seconds)


def _read_completion(result: Any) -> tuple[str, int, str]:
    """(text, completion tokens, "stop" or "length") of a `create_completion` result."""
    choice = result["choices"][0]
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    return str(choice["text"]), int(result["usage"]["completion_tokens"]), finish


def _completion_kwargs(*, max_tokens: int, stop: Sequence[str], temperature: float,
                       seed: int, processor: Any, stopping: Any = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "max_tokens": max_tokens,
        "stop": list(stop),
        "temperature": temperature,
        "seed": seed,
        "repeat_penalty": 1.0,
    }
    if processor is not None:
        from llama_cpp import LogitsProcessorList

        kwargs["logits_processor"] = LogitsProcessorList([processor])
    if stopping is not None:
        from llama_cpp import StoppingCriteriaList

        kwargs["stopping_criteria"] = StoppingCriteriaList([stopping])
    return kwargs


def _open_llama(path: Path, *, n_ctx: int, n_threads: int | None, seed: int,
                verbose: bool) -> llama_cpp.Llama:
    """Load with llama.cpp's chatter off; a file it cannot load becomes ModelFileError."""
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr

    try:
        # llama.cpp writes some notes (e.g. Gemma's SWA cache) straight to fd 2
        with suppress_stdout_stderr(disable=verbose), _extra_buffers(use_extra_buffers()):
            return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                         n_threads_batch=n_threads, seed=seed, verbose=verbose)
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelFileError(
            f"{path} could not be loaded by llama.cpp: truncated or corrupt GGUF ({exc})"
        ) from None


_PARAMS_LOCK = threading.Lock()


def use_extra_buffers() -> bool:
    """Whether llama.cpp may place weights in its extra CPU buffer types (repacked and AMX).

    Why not always: on a CPU that advertises Intel AMX (`amx_tile`) inside a VM that does
    not pass AMX through, llama.cpp's AMX matmul dies with SIGILL on the first prompt of
    more than a few tokens (seen on a Firecracker guest: `tileloadd` in
    `ggml_backend_amx_mul_mat`, the permission syscall succeeding). Such CPUs get the
    plain buffers; `LOCALAGENT_LLAMA_EXTRA_BUFFERS=1` (or `0`) decides instead.
    """
    import os

    forced = os.environ.get("LOCALAGENT_LLAMA_EXTRA_BUFFERS")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return " amx_tile" not in flags


class _extra_buffers:
    """Within the block, `Llama(...)` loads with `use_extra_bufts` as given.

    llama-cpp-python builds its `llama_model_params` from `llama_model_default_params()`
    and does not expose this field, so the default is wrapped for the load only."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __enter__(self) -> None:
        import llama_cpp.llama_cpp as native

        if self.enabled:
            return
        _PARAMS_LOCK.acquire()
        self._native, self._default = native, native.llama_model_default_params

        def params() -> Any:
            value = self._default()
            value.use_extra_bufts = False
            return value

        native.llama_model_default_params = params

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            return
        self._native.llama_model_default_params = self._default
        _PARAMS_LOCK.release()
