"""The one narrow interface every model backend implements.

Planners, prompt functions and the executor see only `LLM`; the llama.cpp backend and the
scripted test double are interchangeable behind it. Chat is defined on top of completion
(`format_chat` renders the model's own chat template to text) so that constraints and the
KV-cache prefix reuse work the same way for both.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from localagent.constraint import Constraint

GREEDY_PROBE_TOKENS = 4  # what `LLM.next_tokens` generates where it reads no probabilities
Message = dict[str, Any]
GiveUp = Callable[[str], bool]  # the output so far -> stop generating now
"""An OpenAI-style chat message: {"role": ..., "content": ..., optional "tool_calls"/"tool_call_id"}."""


@dataclass(frozen=True)
class Usage:
    """What one or more LLM calls cost.

    `prompt_tokens_reused` are prompt tokens found in the KV cache (a shared prefix with the
    previous call) and not evaluated again; `prompt_tokens_evaluated` is what was computed.
    `prompt_tokens_loaded`: of the reused tokens, those restored from the disk prompt
    cache (llm/prompt_cache.py) rather than left in memory by an earlier call.
    """

    calls: int = 0
    prompt_tokens: int = 0
    prompt_tokens_reused: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    prompt_tokens_loaded: int = 0

    @property
    def prompt_tokens_evaluated(self) -> int:
        return self.prompt_tokens - self.prompt_tokens_reused

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            prompt_tokens_reused=self.prompt_tokens_reused + other.prompt_tokens_reused,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
            prompt_tokens_loaded=self.prompt_tokens_loaded + other.prompt_tokens_loaded,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "prompt_tokens_reused": self.prompt_tokens_reused,
            "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
            "prompt_tokens_loaded": self.prompt_tokens_loaded,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    finish_reason: Literal["stop", "length"] = "stop"
    prompt: str = field(default="", repr=False)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@dataclass(frozen=True)
class NextTokens:
    """The model's distribution over the first token it would write after a prompt: the
    `top_k` most likely tokens as (text, probability), most likely first, and what the
    prompt evaluation cost. A backend that cannot read probabilities reports its greedy
    continuation with probability 1."""

    choices: tuple[tuple[str, float], ...]
    usage: Usage

    def mass(self, accept: Callable[[str], bool]) -> float:
        """The probability of the tokens whose text `accept` takes."""
        return sum(p for text, p in self.choices if accept(text))


@dataclass(frozen=True)
class ModelInfo:
    name: str
    path: str | None
    chat_format: str | None  # None for base models without a chat template
    n_ctx: int
    supports_tools: bool = False


class LLM(ABC):
    """A text model. Implementations: `LlamaCppLLM` (real), `ScriptedLLM` (tests)."""

    info: ModelInfo

    @abstractmethod
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
        """Continue `prompt`. With a constraint, the output is forced to match it.

        `give_up(text so far)` returning True ends generation at once (finish "stop"): an
        unconstrained output that can no longer be accepted need not run to max_tokens.
        """

    @abstractmethod
    def format_chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """Render messages (and OpenAI-style tool schemas) with the model's chat template."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        ...

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float | None = None,
        seed: int | None = None,
        constraint: Constraint | None = None,
        give_up: GiveUp | None = None,
    ) -> Completion:
        prompt = self.format_chat(messages, tools=tools)
        return self.complete(
            prompt,
            max_tokens=max_tokens,
            stop=stop,
            temperature=temperature,
            seed=seed,
            constraint=constraint,
            give_up=give_up,
        )

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Calls made inside leave the reusable state (a backend's KV cache) as they found
        it. Why: a short side call (the filter's query translation) between two planner
        calls would otherwise evict the planner's cached prompt prefix. Backends without
        such state need nothing (this default)."""
        yield

    def next_tokens(self, prompt: str, *, top_k: int = 64) -> NextTokens:
        """The distribution of the first token after `prompt` (unconstrained). Why: a
        yes/no choice the model makes in its first token (call a tool or answer in text)
        is read as a probability, which can be thresholded, instead of one greedy sample.
        The default knows no probabilities (`greedy_next_tokens`, a few tokens so that
        leading whitespace does not hide the choice); backends that can read logits override it."""
        return greedy_next_tokens(self, prompt, GREEDY_PROBE_TOKENS)


def greedy_next_tokens(llm: LLM, prompt: str, max_tokens: int) -> NextTokens:
    """`NextTokens` for a backend without probabilities: its greedy continuation of up to
    `max_tokens` tokens, with probability 1."""
    completion = llm.complete(prompt, max_tokens=max_tokens, temperature=0.0, constraint=None)
    return NextTokens(choices=((completion.text, 1.0),), usage=completion.usage)


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items (tokens) `a` and `b` share: what a KV cache holding `a` can
    reuse of a prompt `b`."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
