"""The order and split of a prompt's manual, chosen for KV-cache reuse.

Why: llama.cpp reuses the longest prefix a prompt shares with the tokens already in its
KV cache, and every token after the first difference is evaluated again (130-190 a second
on a 2-core laptop). Two goals over the same tools differ in two places besides the goal
line: the filter may offer another function or two, and `mentions` rewrites the manual
entries of functions whose values the goal names (`one of "A", "C"`). So:

- `values_apart` (tree and sequential planners): the manual lists every value of such
  an argument, and the values this goal names follow the manual in one line, before the
  goal; the grammar still admits only those. The whole manual is then the same for
  every goal over the same tools. (Moving the narrowed entries to the end of the
  manual instead was measured and dropped: docs/BENCHMARKS.md, stops 38-39);
- `OfferOrder`: within one session (an `Agent`, a `localagent chat`), a function keeps
  the place it had when first offered, and functions offered for the first time come
  after those seen before, so a new goal that adds a function shares the manual of the
  goal before it up to the end of their common part.

None reads the goal: `values_apart` compares the values two copies of a schema list,
`OfferOrder` remembers names. A fresh process (one `localagent run`, each benchmark
task) sees the filter's canonical order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from localagent.tools.manual import listed_values
from localagent.tools.spec import ToolSpec


def _values_narrowed(before: ToolSpec, after: ToolSpec) -> dict[str, list[Any]]:
    """The arguments of `after` that list other values than in `before`, with those
    values (the ones the goal names)."""
    if after is before:
        return {}
    old = before.parameters.get("properties", {})
    out: dict[str, list[Any]] = {}
    for name, schema in after.parameters.get("properties", {}).items():
        values = listed_values(schema) if isinstance(schema, dict) else None
        if values is not None and values != listed_values(old.get(name, {})):
            out[name] = values
    return out


class OfferOrder:
    """First-offered order of functions across the goals of one session (see module)."""

    def __init__(self) -> None:
        self._rank: dict[str, int] = {}

    def __call__(self, specs: Sequence[ToolSpec]) -> list[ToolSpec]:
        """`specs` with those offered before first, in the order they were first offered,
        then the new ones in the order given (the filter's canonical order)."""
        for spec in specs:
            self._rank.setdefault(spec.qualified_name, len(self._rank))
        return sorted(specs, key=lambda s: self._rank[s.qualified_name])


def values_apart(original: Sequence[ToolSpec],
                 shown: Sequence[ToolSpec]) -> tuple[list[ToolSpec], str]:
    """`shown` for a goal-independent manual, and the goal's values as a note for after it:
    each argument that lists other values than in `original` (the ones the goal names)
    lists its original values in the manual, and the note says which of them this goal
    allows ("" when none). The grammar still admits only the narrowed values."""
    manual: list[ToolSpec] = []
    lines: list[str] = []
    for before, after in zip(original, shown, strict=True):
        narrowed = _values_narrowed(before, after)
        if not narrowed:
            manual.append(after)
            continue
        old = before.parameters["properties"]
        properties = {**after.parameters["properties"], **{k: old[k] for k in narrowed}}
        manual.append(replace(after, parameters={**after.parameters, "properties": properties}))
        lines += [f"{after.qualified_name} {name}: "
                  + ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
                  for name, values in narrowed.items()]
    note = ("Values of this goal: " + "; ".join(lines) + "\n") if lines else ""
    return manual, note


def plan_manual(original: Sequence[ToolSpec],
                tools: Sequence[ToolSpec], compact: bool) -> tuple[list[ToolSpec], str]:
    """The functions and the values note a plan prompt shows for `tools` (`original` as
    narrowed for one goal): `values_apart`, except in a compact prompt (one signature
    line per function, no manual to keep stable), which shows `tools` as they are."""
    return (list(tools), "") if compact else values_apart(original, tools)
