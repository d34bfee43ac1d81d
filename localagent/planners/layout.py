"""The order of the functions in a prompt's manual, chosen for KV-cache reuse.

Why: llama.cpp reuses the longest prefix a prompt shares with the tokens already in its
KV cache, and every token after the first difference is evaluated again (about 130 a
second on a 2-core laptop). Two goals over the same tools differ in two places besides
the goal line: the filter may offer another function or two, and `mentions` rewrites the
manual entries of functions whose values the goal names (`one of "A", "C"`). So:

- `goal_dependent_last`: entries that list values this goal narrowed an argument to go
  after the others, so the entries that read the same for most goals form one stable
  block (an argument narrowed to "the result of another function" reads so for every
  goal that names a value to look up, so it does not count);
- `OfferOrder`: within one session (an `Agent`, a `localagent chat`), a function keeps
  the place it had when first offered, and functions offered for the first time come
  after those seen before, so a new goal that adds a function shares the manual of the
  goal before it up to the end of their common part.

Neither reads the goal: the first compares the values two copies of a schema list, the
second remembers names. A fresh process (one `localagent run`, each benchmark task) sees canonical order
with the narrowed entries last.
"""

from __future__ import annotations

from collections.abc import Sequence

from localagent.tools.manual import listed_values
from localagent.tools.spec import ToolSpec


def goal_dependent_last(original: Sequence[ToolSpec],
                        shown: Sequence[ToolSpec]) -> list[ToolSpec]:
    """`shown` (the same functions as `original`, in its order, some narrowed for a goal)
    with the functions that list other values than before (`listed_values`) moved to the
    end, both parts in their order."""
    same: list[ToolSpec] = []
    narrowed: list[ToolSpec] = []
    for before, after in zip(original, shown, strict=True):
        (narrowed if _lists_other_values(before, after) else same).append(after)
    return same + narrowed


def _lists_other_values(before: ToolSpec, after: ToolSpec) -> bool:
    if after is before:
        return False
    old = before.parameters.get("properties", {})
    new = after.parameters.get("properties", {})
    return any(listed_values(schema) not in (None, listed_values(old.get(name, {})))
               for name, schema in new.items() if isinstance(schema, dict))


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
