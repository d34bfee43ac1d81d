"""A plan that ends on an object takes one of its parts: the model picks which.

Why: asked "How much was order 17?", the default model wrote a one-step sequential plan
`Orders.Get(17)` and ended it (`}` at log-probability -0.05, against -5.7 for `, "field"`),
so the answer was the whole order. From the same text continued with `, "field": "`, it
chose `"total"` (-0.28). A grammar that simply forbids ending on the whole object does not
get there: the model, kept from closing the plan after the lookup, wrote a second step
instead (`multiply($1.total, 1)`, or a lookup of an unrelated sensor).

So the plan is generated as before, and when its last call returns an object that declares
its keys (`fields.keyed_object`: a pydantic model, a TypedDict, a JSON schema with
`properties`) and takes no part of it, the model continues the plan's own text from the end
of that call's arguments under `fields.part_choice`: one of the declared parts, which the
plan then carries as the call's `"field"`. Lists and objects without declared keys are left
whole. Nothing about the goal's words is read: the parts come from the return schema and the
choice from the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from localagent.grammar.fields import keyed_object, part_choice
from localagent.llm.base import LLM, Message
from localagent.planners.base import GenerationLog, PlannerSettings
from localagent.tools.spec import ToolSpec

MAX_PART_TOKENS = 24


def with_part(llm: LLM, messages: Sequence[Message], text: str, call: dict[str, object],
              tools: Sequence[ToolSpec], closing: str, settings: PlannerSettings,
              log: GenerationLog) -> str | None:
    """`text` (a constrained plan output that ends with `call`, then `closing`) with a
    `"field"` added to that call, chosen by the model continuing `text`; None when there
    is nothing to choose: the call takes a part already, its function's result is not a
    `keyed_object`, or the text does not end as the grammar writes it (unconstrained)."""
    spec = next((t for t in tools if t.qualified_name == call.get("function")), None)
    body = text.rstrip()
    if (not settings.constrain or "field" in call or spec is None
            or not keyed_object(spec.returns) or not body.endswith(closing)):
        return None
    prefix = body[:len(body) - len(closing)]
    completion = llm.complete(llm.format_chat(list(messages)) + prefix,
                              max_tokens=MAX_PART_TOKENS, temperature=settings.temperature,
                              seed=settings.seed, constraint=part_choice(spec.returns))
    log.add(completion)
    if completion.truncated:
        return None
    return prefix + completion.text + closing
