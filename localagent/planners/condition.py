"""The `check` technique: a goal that states a condition is answered condition first.

Why: on a goal whose action depends on a condition (a sum of money to convert only if it
rained in a given city today) the default model makes the conversion at once and never
looks at the weather (measured: solved in 1 of 5 runs when it rained, 0 of 5 when it did
not). The goal's condition decides whether the action is wanted at all, so it must be
checked before anything else is done.

How: when the goal states a condition ("if", "whether", "unless") and some offered
function answers yes or no (it returns a boolean) about something the goal names (a word
of its name, such as "rain" of DidItRainToday, begins a word of the goal: "rained"), the
first turn makes one call, of such a function. Then:
- it said no and the goal names no alternative ("otherwise", "else", "if not", "if it
  did not"): the next turn must answer; the action the condition guarded is not taken;
- else the next turn must act, calling one of the other functions (seen: the model
  answered "true" or "false" and stopped), and the turn after it must answer (seen: ten
  more conversions, back and forth, then an exchange rate as the answer); with
  `grounded` the answer restates a result of the action, not the check's yes or no.
The model still picks the functions and their arguments. Known cost: a check whose
argument must itself be looked up ("the city where Ada lives") is made first anyway, on
the model's guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from localagent.tools.spec import ToolSpec

_CONDITION = re.compile(r"\b(if|whether|unless)\b", re.IGNORECASE)
_ALTERNATIVE = re.compile(
    r"\b(otherwise|else|if not|if (?:it|they|he|she|I|you|we) (?:did|does|do|is|was|were|"
    r"has|have)(?: not|n't))\b", re.IGNORECASE)


def states_condition(goal: str) -> bool:
    return bool(_CONDITION.search(goal))


def names_alternative(goal: str) -> bool:
    """Whether the goal says what to do when the condition does not hold."""
    return bool(_ALTERNATIVE.search(goal))


# words of a yes/no function's name that say nothing about what it decides
_GENERIC = {"does", "have", "today", "check", "with", "from", "there", "that", "this"}


def _telling_words(tool: ToolSpec) -> set[str]:
    """The words of the function's name that say what it decides ("rain")."""
    return {w for w in tool.name_words if len(w) >= 4 and w.isalpha()} - _GENERIC


def yes_no_tools(tools: Sequence[ToolSpec], goal: str) -> list[ToolSpec]:
    """The functions that return a boolean and decide something `goal` names (a word of
    the function's name begins a word of the goal)."""
    goal_words = re.findall(r"[a-z]+", goal.lower())
    return [t for t in tools
            if isinstance(t.returns, dict) and t.returns.get("type") == "boolean"
            and any(g.startswith(w) for w in _telling_words(t) for g in goal_words)]


@dataclass
class ConditionCheck:
    """One loop's `check` state: the yes/no functions to call first, and whether the
    condition was found false (then the loop must answer)."""

    deciders: list[ToolSpec]
    others: list[ToolSpec]
    stop_when_false: bool
    checked: bool = False
    failed: bool = False
    to_act: bool = False  # checked, not failed: the next turn must call another function
    acted: bool = False  # it did: the next turn must answer

    @classmethod
    def of(cls, goal: str, tools: Sequence[ToolSpec], on: bool) -> ConditionCheck:
        """Inactive (nothing to check) when `check` is off, the goal states no condition
        or no function answers yes or no."""
        deciders = yes_no_tools(tools, goal) if on and states_condition(goal) else []
        others = [t for t in tools if t not in deciders]
        return cls(deciders, others, stop_when_false=not names_alternative(goal),
                   checked=not deciders)

    def must_call(self) -> list[ToolSpec]:
        """The functions the next turn must choose from ([]: no restriction)."""
        if not self.checked:
            return self.deciders
        return self.others if self.to_act else []

    @property
    def max_calls(self) -> int | None:
        """One call while checking (seen: four identical checks in one turn), else None."""
        return None if self.checked else 1

    def record_turn(self, calls: Sequence[tuple[str, Any]]) -> None:
        """A turn's finished calls (function, value or None). A decider's false result
        without an alternative means answer; any other result, act."""
        self.acted = self.acted or (self.to_act and any(f not in self._names for f, _ in calls))
        self.to_act = self.to_act and not self.acted
        for function, value in calls:
            if function in self._names and not self.checked:
                self.checked = True
                self.failed = value is False and self.stop_when_false
                self.to_act = not self.failed and bool(self.others)

    def answer_values(self, observed: Sequence[tuple[str, Any]]) -> list[Any]:
        """The observed values a grounded answer may restate: after acting, the action's
        results only (seen: "true", the check's result, given as the answer)."""
        if not self.acted:
            return [value for _, value in observed]
        return [value for function, value in observed if function not in self._names]

    @property
    def _names(self) -> set[str]:
        return {t.qualified_name for t in self.deciders}

    @property
    def must_answer(self) -> bool:
        return self.failed or self.acted
