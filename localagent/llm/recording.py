"""An LLM wrapper that keeps every raw output (and optionally the prompts) of a run.

The agent's result has the plan and the executed steps but not what the model wrote when
its output was rejected; the benchmark keeps those outputs in the raw results so a parse
failure can be read afterwards, and `--verbose` front ends can show prompts as they go.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from localagent.llm.base import LLM, Completion
from localagent.llm.delegating import DelegatingLLM


@dataclass(frozen=True)
class Exchange:
    """One model call: the prompt's size (and text, when kept) and the raw output."""

    prompt_chars: int
    output: str
    finish_reason: str
    constrained: bool
    prompt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "prompt_chars": self.prompt_chars,
            "output": self.output,
            "finish_reason": self.finish_reason,
            "constrained": self.constrained,
        }
        if self.prompt is not None:
            out["prompt"] = self.prompt
        return out


class RecordingLLM(DelegatingLLM):
    """Delegates to `inner`; appends an Exchange per call to `exchanges` and hands it to
    `on_exchange` (for live display). `keep_prompts=False` keeps only their length."""

    def __init__(
        self,
        inner: LLM,
        *,
        keep_prompts: bool = False,
        on_exchange: Callable[[Exchange], None] | None = None,
    ) -> None:
        super().__init__(inner)
        self.keep_prompts = keep_prompts
        self.on_exchange = on_exchange
        self.exchanges: list[Exchange] = []

    def take(self) -> list[Exchange]:
        """The exchanges since the last take (one benchmark run's)."""
        taken, self.exchanges = self.exchanges, []
        return taken

    def complete(self, prompt: str, **kwargs: Any) -> Completion:  # type: ignore[override]
        completion = self.inner.complete(prompt, **kwargs)
        full = Exchange(
            len(prompt),
            completion.text,
            completion.finish_reason,
            kwargs.get("constraint") is not None,
            prompt,
        )
        self.exchanges.append(full if self.keep_prompts else replace(full, prompt=None))
        if self.on_exchange is not None:
            self.on_exchange(full)
        return completion



def format_exchange(exchange: Exchange, *, prompt_tail: int | None = None) -> str:
    """Text for `--verbose` displays: the prompt (or its last `prompt_tail` characters, as a
    growing ReAct prompt repeats itself) and the raw output, marked as constrained or not."""
    prompt = exchange.prompt or f"<{exchange.prompt_chars} characters, not kept>"
    if prompt_tail is not None and len(prompt) > prompt_tail:
        prompt = "..." + prompt[-prompt_tail:]
    mode = "constrained" if exchange.constrained else "free"
    return (
        f"--- prompt ({exchange.prompt_chars} chars) ---\n{prompt}\n"
        f"--- output ({mode}, {exchange.finish_reason}) ---\n{exchange.output}"
    )
