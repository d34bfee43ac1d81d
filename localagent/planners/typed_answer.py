"""The last step of a run with a declared answer type: the answer written under the type.

Why a step of its own: a planner's answer is whatever a result happened to be (a number, a
record, a sentence); the user asked for a type (`Agent.run(goal, output_type=T)`,
`--output-schema`). Every planner ends the same way, so this runs after any of them:

1. The run's answer is the typed value already when it validates as the type (a tool
   returned the record the model declares, an `int` answer for `int`): no generation.
2. Otherwise the model sees the goal, the calls made with their results, and the run's
   answer, and writes the answer under the type's grammar (`answer_type.py`), so the text
   parses and validates by construction; the fields' values are the model's to take from
   the results (which values it took is measured, docs/BENCHMARKS.md). A parse or
   validation failure the grammar cannot rule out (a cross-field rule of a validator) is
   retried like any checked generation, then fails the run with one line.

The call runs beside the planner's KV cache (`LLM.aside`), as `observe` does.
"""

from __future__ import annotations

import json
from typing import Any

from localagent.answer_type import AnswerType
from localagent.conversation import call_text, calls_of
from localagent.llm.base import LLM, Message
from localagent.planners.base import GenerationLog, PlannerSettings, generate_checked

MAX_TYPED_TOKENS = 256
MAX_CALLS = 12
RESULT_CHARS = 1500  # of each result shown: records are what typed answers are made from
SYSTEM = ("You answer a goal from the results of the function calls made for it. Take the "
          "values from the results; write the answer only, in the form asked for.")


def already_typed(kind: AnswerType, answer: Any) -> tuple[bool, Any]:
    """(True, the typed value) when the run's answer validates as the type as it is."""
    if answer is None:
        return False, None
    try:
        return True, kind.accepts(answer)
    except (ValueError, TypeError):
        return False, None


def typed_answer(llm: LLM, goal: str, answer: Any, steps: list[dict[str, Any]],
                 kind: AnswerType, settings: PlannerSettings, log: GenerationLog) -> Any:
    """The answer to `goal` as `kind`'s typed value (see the module docstring)."""
    done, value = already_typed(kind, answer)
    if done:
        return value
    return _generate(llm, typed_messages(goal, answer, steps, kind), kind, settings, log)


def typed_messages(goal: str, answer: Any, steps: list[dict[str, Any]],
                   kind: AnswerType) -> list[Message]:
    calls = calls_of(steps)[-MAX_CALLS:]
    lines = [f"Goal: {goal}"]
    if calls:
        lines += ["Calls and results:",
                  *(f"- {call_text(*c, limit=RESULT_CHARS)}" for c in calls)]
    if answer is not None:
        shown = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False,
                                                                  default=str)
        lines.append(f"Answer found: {shown[:RESULT_CHARS]}")
    lines.append(f"Write the answer as {kind.shown}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def _generate(llm: LLM, messages: list[Message], kind: AnswerType,
              settings: PlannerSettings, log: GenerationLog) -> Any:
    def parse(text: str) -> Any:
        from localagent.errors import PlanValidationError

        try:
            return kind.parse(text.strip())
        except (ValueError, TypeError) as exc:
            first = str(exc).strip().splitlines()
            raise PlanValidationError(f"the answer is not a valid {kind.name}: "
                                      f"{first[0] if first else exc}") from None

    with llm.aside():
        return generate_checked(llm, messages, parse, settings, log,
                                constraint=kind.constraint, max_tokens=MAX_TYPED_TOKENS)
