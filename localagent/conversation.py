"""A conversation: earlier turns (goals, calls, results, answers) shown with the next goal.

Why: "move the report to temp", then "now sort it"; "how far is Lyon from Porto?", then
"and in miles?". A line that refers to an earlier one cannot be planned alone. So every
planner's prompt shows the earlier turns before the goal, oldest first, each as its goal,
the calls made with their results, and its answer: the plan planners and ReAct as text
before the goal (`PlannerSettings.context`, `framed`), the tool-calling planner as the
chat messages its model was trained on (`PlannerSettings.history`: user, assistant tool
calls, tool results, assistant answer, then the new goal as the user's). The tool filter
reads them too. The plan planners' prompts put the goal after the
manual of functions, so the manual's KV cache is reused as before, and a new turn only
appends to what the last one sent.

What the earlier turns do not do: the techniques that force the goal's stated values into
calls (`values`, `numbers`, coverage) read the new goal alone. Shown as part of the goal,
a first turn's "100" and "108.0" were multiplied into the next, unrelated "What is 12
times 7?" (907200, on the 1.5B). Techniques that only admit stated values (`mentions`)
admit the earlier turns' values too: the user stated them.

Bounded: at most `max_turns` turns, each turn's text at most MAX_CHARS (longer results
are cut, marked with "..."); the oldest turns go first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

MAX_TURNS = 4
MAX_CHARS = 600
MAX_CALLS = 6


class _Result(Protocol):
    """What a turn keeps of an `AgentResult`."""

    answer: Any
    error: str | None
    steps: list[dict[str, Any]]

    @property
    def ok(self) -> bool: ...


@dataclass(frozen=True)
class Turn:
    """One earlier goal, the calls made for it (function, arguments, result), its answer."""

    goal: str
    calls: tuple[tuple[str, dict[str, Any], Any], ...]
    answer: Any

    def text(self, max_chars: int = MAX_CHARS) -> str:
        lines = [f"Goal: {self.goal}", *(f"Call: {call_text(*c)}" for c in self.calls),
                 f"Answer: {_short(self.answer, max_chars // 2)}"]
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[:max_chars - 3] + "..."


@dataclass
class Conversation:
    """Earlier turns, newest last (see module docstring). `clear` starts afresh."""

    max_turns: int = MAX_TURNS
    turns: list[Turn] = field(default_factory=list)

    def add(self, goal: str, result: _Result) -> None:
        """Keep `goal` and what its run called and answered (an unanswered goal too: its
        calls may be what the next line refers to)."""
        dump = getattr(result, "answer_json", None)  # a typed answer as JSON data
        answer = ((dump() if dump else result.answer) if result.ok
                  else f"(no answer: {result.error})")
        self.turns.append(Turn(goal, tuple(calls_of(result.steps))[:MAX_CALLS], answer))
        del self.turns[:-self.max_turns]

    def clear(self) -> None:
        self.turns.clear()

    def messages(self) -> list[dict[str, Any]]:
        """The earlier turns as chat messages (the tool-calling planner's layout): each
        goal as the user's, its calls and their results as the assistant's tool calls and
        the tool messages, its answer as the assistant's."""
        out: list[dict[str, Any]] = []
        for n, turn in enumerate(self.turns):
            out.append({"role": "user", "content": turn.goal})
            ids = [f"earlier_{n}_{k}" for k in range(len(turn.calls))]
            if turn.calls:
                out.append({"role": "assistant", "content": "", "tool_calls": [
                    {"id": cid, "type": "function",
                     "function": {"name": function, "arguments": args}}
                    for cid, (function, args, _) in zip(ids, turn.calls)]})
                out += [{"role": "tool", "tool_call_id": cid, "name": function,
                         "content": _short(result, MAX_CHARS // 2)}
                        for cid, (function, _, result) in zip(ids, turn.calls)]
            out.append({"role": "assistant", "content": _short(turn.answer, MAX_CHARS // 2)})
        return out

    def context(self) -> str:
        """The earlier turns as a prompt shows them before the goal ("" when none)."""
        if not self.turns:
            return ""
        earlier = "\n\n".join(t.text() for t in self.turns)
        return f"Earlier in this conversation:\n{earlier}"


def calls_of(steps: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(function, arguments, result) for each finished call in a run's steps, whatever the
    planner: trace events (tree, sequential), ReAct steps, tool-calling turns."""
    out = []
    for step in steps:
        if step.get("kind") == "call_finished" and step.get("error") is None:
            out.append((step["function"], step.get("args") or {}, step.get("result")))
        elif step.get("function") and "observation" in step:  # a ReAct step
            out.append((step["function"], step.get("args") or {}, step["observation"]))
        calls = step.get("calls")
        for call in calls if isinstance(calls, list) else ():  # a tool-calling turn
            if isinstance(call, dict) and call.get("error") is None:
                out.append((call["function"], call.get("args") or {}, call.get("result")))
    return out


def call_text(function: str, args: dict[str, Any], result: Any, limit: int = 200) -> str:
    """`F(a=1, b="x") -> result`, the result cut to `limit` characters."""
    shown = ", ".join(f"{k}={_short(v, 80)}" for k, v in (args or {}).items())
    return f"{function}({shown}) -> {_short(result, limit)}"


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."
