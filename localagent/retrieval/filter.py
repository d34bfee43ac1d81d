"""Which functions a planner sees for a goal: Semantic Kernel's filter options over the index.

Filtering runs before the planner builds its prompt and grammar, so the manual gets shorter
and the grammar admits only the functions kept.

Meaning of the options (Semantic Kernel's names; `None` means "no limit"):
- `excluded_plugins`, `excluded_functions`: never offered. Exclusion wins over inclusion
  for a function inside an excluded plugin; naming one function in both lists is an error.
- `relevancy_threshold`: keep functions whose similarity to the goal (0..1, cosine) is at
  least this.
- `max_relevant_functions`: keep at most this many of the best-scoring functions.
- `included_functions`: always kept, whatever their score, on top of the
  `max_relevant_functions` best (as Semantic Kernel adds the missing included ones).
- `whole_plugins` (ours, off by default): with `max_relevant_functions`, a plugin that has
  a kept function is offered whole when all of its functions fit in the count the options
  allow (`max_relevant_functions` plus the included functions), plugins taken by their
  best score. Two goals over the same tools then mostly get the same functions, so their
  prompts share the manual and the model's KV cache reuses it (two invoice goals that kept
  different currency functions: 685 of 1,373 prompt tokens evaluated, 356 with it). It
  reads only which plugin a function belongs to. Off by default because the siblings it
  adds are distractors for a small model: on the 17 multilingual-suite tasks whose offer it
  changes, the default model solved fewer (docs/BENCHMARKS.md).

A function name with a dot (`math.Add`) names one function; without a dot (`Add`) it names
that function in every plugin. Semantic Kernel filters only when a threshold is set; here
`FilterOptions.active` says whether filtering was asked for at all, and callers skip
`filter_tools` (and the embedding model) when it is not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from localagent.errors import DuplicateFunctionError, UnknownFunctionError, UsageError
from localagent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from localagent.retrieval.index import ToolIndex


@dataclass(frozen=True)
class FilterOptions:
    relevancy_threshold: float | None = None
    max_relevant_functions: int | None = None
    excluded_functions: tuple[str, ...] = ()
    excluded_plugins: tuple[str, ...] = ()
    included_functions: tuple[str, ...] = ()
    whole_plugins: bool = False

    def __post_init__(self) -> None:
        t = self.relevancy_threshold
        if t is not None and (isinstance(t, bool) or not 0.0 <= float(t) <= 1.0):
            raise UsageError(f"relevancy threshold must be between 0 and 1, got {t}")
        n = self.max_relevant_functions
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise UsageError(f"max relevant functions must be a whole number >= 0, got {n}")
        for field_name in ("excluded_functions", "excluded_plugins", "included_functions"):
            value = getattr(self, field_name)
            if isinstance(value, str):  # a bare string would be read letter by letter
                object.__setattr__(self, field_name, (value,))
        both = set(self.excluded_functions) & set(self.included_functions)
        if both:
            raise UsageError(
                f"functions both included and excluded: {', '.join(sorted(both))}"
            )

    @property
    def active(self) -> bool:
        """Whether semantic filtering was asked for (a threshold or a count)."""
        return self.relevancy_threshold is not None or self.max_relevant_functions is not None

    def allows(self, spec: ToolSpec) -> bool:
        """Whether `spec` survives the exclusions (before any similarity ranking)."""
        return spec.plugin not in self.excluded_plugins and not _matches(
            spec, self.excluded_functions)


@dataclass(frozen=True)
class ScoredTool:
    spec: ToolSpec
    score: float  # cosine similarity to the goal, 1 - cosine distance


# Clause boundaries: punctuation and the words that join the steps of a multi-step goal.
_CLAUSE_SPLIT = re.compile(r"[,;:?!.]|\b(?:and|then|between|after|before|also)\b", re.IGNORECASE)


def goal_queries(goal: str) -> list[str]:
    """The goal and its clauses (two words or more), the texts a goal is searched with.

    Why: one vector for a multi-step goal leans toward its most prominent step (looking up
    "the prices of A and B") and buries the others ("the difference"). Scoring each function by its best
    similarity to the goal or any clause finds every step's function; measured in
    scripts/bench_retrieval.py (it also shows the small cost on one-step goals).
    """
    goal = goal.strip()
    clauses = [c.strip() for c in _CLAUSE_SPLIT.split(goal)]
    whole = goal.rstrip(" ?!.")
    kept = [c for c in clauses if len(c.split()) >= 2 and c != whole]
    return list(dict.fromkeys([goal, *kept]))


def _matches(spec: ToolSpec, names: Sequence[str]) -> bool:
    return spec.qualified_name in names or spec.name in names


def _check_known(specs: Sequence[ToolSpec], options: FilterOptions) -> None:
    """Unknown names in the options are mistakes, not silent no-ops."""
    plugins = {s.plugin for s in specs}
    unknown_plugins = [p for p in options.excluded_plugins if p not in plugins]
    unknown_functions = [
        name
        for name in (*options.excluded_functions, *options.included_functions)
        if not any(_matches(s, (name,)) for s in specs)
    ]
    if unknown_plugins or unknown_functions:
        listed = ", ".join([*(f"plugin {p}" for p in unknown_plugins), *unknown_functions])
        raise UnknownFunctionError(f"filter options name unknown functions: {listed}")


def _check_unique(specs: Sequence[ToolSpec]) -> None:
    counts = Counter(s.qualified_name for s in specs)
    dupes = sorted(name for name, n in counts.items() if n > 1)
    if dupes:
        raise DuplicateFunctionError(f"duplicate functions: {', '.join(dupes)}")


def filter_tools(
    goal: str, specs: Sequence[ToolSpec], options: FilterOptions, index: ToolIndex
) -> list[ScoredTool]:
    """The functions to offer for `goal`, best first.

    Syncs `specs` into the index without pruning (other registries' functions stay), then
    searches only among the allowed functions, so a stale entry can never be returned.
    A function's score is its best similarity to the goal or one of its clauses
    (`goal_queries`).
    """
    _check_unique(specs)
    _check_known(specs, options)
    allowed = [s for s in specs if options.allows(s)]
    if not allowed:
        return []
    index.sync(specs, prune=False)
    by_name = {s.qualified_name: s for s in allowed}
    top_k = len(allowed)
    if options.max_relevant_functions is not None:
        top_k = min(top_k, options.max_relevant_functions)
    queries = goal_queries(goal)
    hits = index.search(queries, top_k=top_k, among=list(by_name)) if top_k else []
    threshold = options.relevancy_threshold
    kept = {
        h.qualified_name: ScoredTool(by_name[h.qualified_name], h.score)
        for h in hits
        if threshold is None or h.score >= threshold
    }
    missing = [
        s.qualified_name
        for s in allowed
        if _matches(s, options.included_functions) and s.qualified_name not in kept
    ]
    if missing:
        for h in index.search(queries, top_k=len(missing), among=missing):
            kept[h.qualified_name] = ScoredTool(by_name[h.qualified_name], h.score)
    if options.whole_plugins and options.max_relevant_functions is not None:
        limit = options.max_relevant_functions + sum(
            _matches(s, options.included_functions) for s in allowed)
        siblings = whole_plugins(list(kept.values()), allowed, limit)
        if siblings:
            for h in index.search(queries, top_k=len(siblings), among=siblings):
                kept[h.qualified_name] = ScoredTool(by_name[h.qualified_name], h.score)
    return sorted(kept.values(), key=lambda t: (-t.score, t.spec.qualified_name))


def whole_plugins(kept: Sequence[ScoredTool], allowed: Sequence[ToolSpec], limit: int) -> list[str]:
    """The functions to add so that plugins with a kept function are offered whole, as long
    as the total stays at most `limit`: plugins by their best kept score (ties by name), a
    plugin all or nothing (a part of one would make the offer differ between goals again)."""
    names = {t.spec.qualified_name for t in kept}
    best: dict[str, float] = {}
    for t in kept:
        best[t.spec.plugin] = max(best.get(t.spec.plugin, -1.0), t.score)
    added: list[str] = []
    for plugin in sorted(best, key=lambda p: (-best[p], p)):
        rest = [s.qualified_name for s in allowed
                if s.plugin == plugin and s.qualified_name not in names]
        if rest and len(names) + len(added) + len(rest) <= limit:
            added.extend(rest)
    return added
