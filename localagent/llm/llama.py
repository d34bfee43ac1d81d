"""The llama.cpp backend: `LlamaCppLLM` wraps one `llama_cpp.Llama`.

Why not go through Outlines' model wrapper: it resets the model after every call, which
throws the KV cache away (DESIGN.md, trap 3). We call `Llama.create_completion` ourselves
with pre-tokenized prompts, so llama-cpp-python's `generate` keeps the longest common
prefix with the previous call in the cache, and a constraint is applied as a logits
processor that is compiled once and only reset per call.

We measure, not guess, how many prompt tokens were evaluated: `generate` evaluates the
un-cached suffix of the prompt in its first `eval` call, so we count that call's tokens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localagent.constraint import Constraint
from localagent.errors import ModelFileError, UsageError
from localagent.llm.base import LLM, Completion, GiveUp, Message, ModelInfo, Usage
from localagent.llm.catalog import CatalogEntry
from localagent.llm.chat_template import TEMPLATE_KEY, ChatTemplate

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
    ) -> None:
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

    def reset_cache(self) -> None:
        """Forget the KV cache: the next call evaluates its whole prompt."""
        with self._lock:
            self._llama.reset()

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
            self._eval_sizes.clear()
            start = time.perf_counter()
            result = self._llama.create_completion(tokens, **kwargs)
            seconds = time.perf_counter() - start
            evaluated = self._eval_sizes[0] if self._eval_sizes else 0
        choice = result["choices"][0]  # type: ignore[index]
        n_completion = int(result["usage"]["completion_tokens"])  # type: ignore[index]
        if processor is not None:
            processor.check_in_force(n_completion)
        usage = Usage(calls=1, prompt_tokens=len(tokens),
                      prompt_tokens_reused=len(tokens) - evaluated,
                      completion_tokens=n_completion, seconds=seconds)
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        return Completion(text=str(choice["text"]), usage=usage, finish_reason=finish,
                          prompt=prompt)

    def close(self) -> None:
        with self._lock:
            self._llama.close()

    # --- internals -----------------------------------------------------------------

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

    def _processor(self, constraint: Constraint | None) -> Any:
        if constraint is None:
            return None
        from localagent.llm.constrained import processor_for

        processor = processor_for(constraint, self._llama)
        processor.reset()
        return processor


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
