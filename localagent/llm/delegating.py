"""A base for LLM wrappers (metering, recording): everything goes to the wrapped model.

Subclasses override `complete` to observe calls; chat rendering, token counting and any
backend-specific attribute (`reset_cache`, `llama`...) pass through unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from localagent.llm.base import LLM, Completion, Message, NextTokens


class DelegatingLLM(LLM):
    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.info = inner.info

    def complete(self, prompt: str, **kwargs: Any) -> Completion:  # type: ignore[override]
        return self.inner.complete(prompt, **kwargs)

    def format_chat(self, messages: Sequence[Message], **kwargs: Any) -> str:  # type: ignore[override]
        return self.inner.format_chat(messages, **kwargs)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def next_tokens(self, prompt: str, *, top_k: int = 64) -> NextTokens:
        return self.inner.next_tokens(prompt, top_k=top_k)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        with self.inner.aside():
            yield

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
