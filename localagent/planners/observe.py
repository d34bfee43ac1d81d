"""After a plan runs: when its value is a record, the model takes the answer from it.

Why: a plan-once planner hands back whatever its last call returned. When that is a record
(`{"author": ..., "year": ..., "pages": 412}`, a `-> dict` whose keys no schema declares)
and the goal asks for one part of it, the answer was the whole record (issue 44).
LLMCompiler's joiner looks at the results before answering; so does this, in one short
constrained generation: the model sees the goal and the result and writes the answer under
a grammar that admits exactly the result's own values, each after its path in the record
(`pages: 412`, `items[0].price: 2.5`: `grounding.observed_answers` with labels, the keys
as observed at run time). Nothing reads the goal's words: the choices come from the
result, the choice from the model. The whole record is not among the choices: offered it,
the 1.5B took it on every goal that asked for one field (3 of 3, in three languages), as
`parts.py` found for plans before they run; the record stays in the trace.

A scalar result is the answer already: no generation. The call runs on a KV state of its
own (`LLM.aside`), so the next goal still finds the plan prompt's prefix cached.

`repair_field` does the same for a field a plan named before it saw the record (a tree
call's `field`, a sequential `$1.key`, on a `-> dict` whose keys no schema declares): when
the record lacks it, the model sees the goal, the access and the record, and chooses one
of the record's own parts under a grammar of exactly those; the plan goes on with it.
Measured: the tree planner on the 1.5B named `date_placed` for a record's `placed` in all
three languages of a typed goal (docs/BENCHMARKS.md, stop 58). Only a failed access costs
a generation.
"""

from __future__ import annotations

import json
from typing import Any

from localagent.llm.base import LLM, Message
from localagent.plan_nodes import FieldPath, path_text
from localagent.planners.base import GenerationLog, PlannerSettings, generate_checked
from localagent.planners.grounding import answer_choice, observed_answers

MAX_OBSERVE_TOKENS = 48
MAX_PARTS = 40  # of a record offered to `repair_field`
NONE_OF_THEM = "(none of these)"  # the repair's way to leave the failure as it is
SYSTEM = ("You answer a goal from the result of the function calls made for it. Reply with "
          "exactly the part of the result that answers the goal.")
REPAIR_SYSTEM = ("A plan for a goal takes a field of a function's result that the result "
                 "does not have. Reply with the part of the result the plan meant.")


def is_record(value: Any) -> bool:
    """A non-empty object, or a list holding objects or lists: a value with parts. A list
    of scalars (the names a search found) is an answer as it is."""
    if isinstance(value, dict):
        return bool(value)
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, (dict, list, tuple)) for v in value)


def observe(llm: LLM, goal: str, value: Any, settings: PlannerSettings,
            log: GenerationLog) -> Any:
    """The part of `value` (a plan's result) that answers `goal`, as the model chooses it;
    `value` itself when it is not a record or holds nothing to choose from."""
    if not is_record(value) or not settings.constrain:
        return value
    choices = observed_answers([value], labels=True)  # shown text -> value as text
    if not choices:
        return value
    whole = json.dumps(value, ensure_ascii=False)
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Goal: {goal}\nResult: {whole}"}]
    with llm.aside():
        chosen = generate_checked(llm, messages, lambda text: text.strip(), settings, log,
                                  constraint=answer_choice(list(choices), name="observed-answer"),
                                  max_tokens=MAX_OBSERVE_TOKENS)
    return _typed(choices[chosen]) if chosen in choices else value


def _typed(text: str) -> Any:
    """An observed value's text as the value (numbers and booleans as JSON reads them)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if isinstance(parsed, (int, float, bool)) else text


def repair_field(llm: LLM, goal: str, value: Any, wanted: FieldPath, access: str,
                 settings: PlannerSettings, log: GenerationLog) -> FieldPath | None:
    """The part of `value` (a record) that a plan's missing field `wanted` meant, as the
    model chooses it among the record's own parts (each written after its path, as
    `observe` offers them) or NONE_OF_THEM; None when it chose none or nothing is there."""
    parts = record_parts(value)
    if not parts or not settings.constrain:
        return None
    whole = json.dumps(value, ensure_ascii=False, default=str)[:2000]
    messages: list[Message] = [
        {"role": "system", "content": REPAIR_SYSTEM},
        {"role": "user", "content": f"Goal: {goal}\nThe plan takes: {access}\n"
                                    f"Missing field: {path_text(wanted, lead=False)}\n"
                                    f"Result: {whole}"}]
    with llm.aside():
        chosen = generate_checked(llm, messages, lambda text: text.strip(), settings, log,
                                  constraint=answer_choice([*parts, NONE_OF_THEM],
                                                           name="field-repair"),
                                  max_tokens=MAX_OBSERVE_TOKENS)
    return parts.get(chosen)


def record_parts(value: Any) -> dict[str, FieldPath]:
    """The parts of a record, outermost first (breadth-first: a top-level key is offered
    before anything inside a long list), as `path: value` texts (objects and lists shown
    short) with their paths; at most MAX_PARTS, at most 10 items of a list."""
    out: dict[str, FieldPath] = {}
    queue: list[tuple[Any, FieldPath]] = [(value, ())]
    while queue and len(out) < MAX_PARTS:
        part, path = queue.pop(0)
        if path:
            shown = json.dumps(part, ensure_ascii=False, default=str)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            out.setdefault(f"{path_text(path, lead=False)}: {shown}", path)
        if isinstance(part, dict):
            queue += [(v, (*path, str(k))) for k, v in part.items()]
        elif isinstance(part, (list, tuple)):
            queue += [(v, (*path, n)) for n, v in enumerate(part[:10])]
    return out
