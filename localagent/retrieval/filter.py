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
- `translate` (ours, on by default): also search with the goal in English, written by the
  planning model (`translation.py`): the bundled embedding model reads English only. It
  needs the model, so it applies where one is at hand (`Agent.tools_for` passes it to
  `filter_tools` as `translate`).

A function name with a dot (`math.Add`) names one function; without a dot (`Add`) it names
that function in every plugin. Semantic Kernel filters only when a threshold is set; here
`FilterOptions.active` says whether filtering was asked for at all, and callers skip
`filter_tools` (and the embedding model) when it is not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from localagent.errors import DuplicateFunctionError, UnknownFunctionError, UsageError
from localagent.retrieval.index import SearchHit
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
    translate: bool = True

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


# Clause boundaries: punctuation only, Latin and CJK (，。；：？！、). Never words: a default
# technique may not read the words of one language (issue 20).
_CLAUSE_SPLIT = re.compile(r"[,;:?!.\uff0c\u3002\uff1b\uff1a\uff1f\uff01\u3001]")
_GOAL_END = " ?!.\uff1f\uff01\u3002"
LONG_CLAUSE = 10  # words: a clause this long is also searched by its two halves


def goal_queries(goal: str) -> list[str]:
    """The goal and its clauses (two words or more), the texts a goal is searched with.

    Why: one vector for a multi-step goal leans toward its most prominent step (looking up
    "the prices of A and B") and buries the others ("the difference"). Scoring each function
    by its best similarity to the goal or any clause finds every step's function; measured
    in scripts/bench_retrieval.py (it also shows the small cost on one-step goals).

    Contract: clauses end at punctuation only, and nothing here reads a word (no list of
    words of any language, no capitalisation): test_clause_split_reads_no_words replaces
    every letter of a goal and expects the same split. The English joining words
    (and/then/between/after/before/also) the split also cut at until issue 20 are gone: a
    default may not read one language's words; `clause_halves` stands in for them.
    """
    goal = goal.strip()
    clauses = [c.strip() for c in _CLAUSE_SPLIT.split(goal)]
    whole = goal.rstrip(_GOAL_END)
    kept = [c for c in clauses if len(c.split()) >= 2 and c != whole]
    return list(dict.fromkeys([goal, *kept]))


def clause_halves(goal: str) -> list[str]:
    """The two halves of every clause of `LONG_CLAUSE` words or more, cut at the space
    nearest its middle character: counts only, no words read.

    Why: a long clause may hold two steps with no punctuation between them, as "How much is
    the difference between the total of company C" (11 words) of the invoice goal; its
    first half finds `DemoPlugin.Diff`, which the goal and its clauses rank 31st of 203.
    `search_goal` takes only each half's best function (a half stands for at most one
    step; every function of a half changes more than twice as many offers, below).

    Measured against the former English split (scripts/bench_offer.py, 376 filtered suite
    tasks; a task counts when its reference plan's functions are all offered): 325 against
    324 offered all they need (de 31, en 188, es 36, fr 38, zh 32; es was 35, one task
    gained, none lost); 38 offers differ from the English split's (22 of the 24 that
    punctuation alone changes, 16 more). Every function of each half instead of its best:
    323, 82 differ. Halves from 9 words on: 324, 43 differ; from 11: 324, 32 differ (the
    invoice clause has 11 words: no margin). scripts/bench_retrieval.py (545 tools, 183
    English queries): recall@5 0.806 (English split 0.808, punctuation alone 0.804), MRR
    0.662 (0.665), multi-tool recall@1 0.750 (0.750, punctuation alone 0.625). Residual
    queries (the goal's vector less its best functions' vectors, up to 4) left `Diff` 31st:
    the goal's vector holds little of "the difference" to recover.
    """
    halves: list[str] = []
    for clause in _CLAUSE_SPLIT.split(goal.strip()):
        clause = clause.strip()
        if len(clause.split()) >= LONG_CLAUSE:
            spaces = [i for i, ch in enumerate(clause) if ch.isspace()]
            cut = min(spaces, key=lambda i: (abs(2 * i - len(clause)), i))
            halves += [clause[:cut].strip(), clause[cut:].strip()]
    return list(dict.fromkeys(halves))


def half_bests(goal: str, index: ToolIndex, among: Sequence[str] | None = None,
               also: Sequence[str] = ()) -> dict[str, SearchHit]:
    """Each half's (`clause_halves`) best function among `among`, with its similarity;
    the halves of the texts in `also` (the goal's translation) count as the goal's."""
    best: dict[str, SearchHit] = {}
    halves = [h for text in (goal, *also) for h in clause_halves(text)]
    for half in dict.fromkeys(halves):
        for h in index.search(half, top_k=1, among=among):
            if h.qualified_name not in best or best[h.qualified_name].score < h.score:
                best[h.qualified_name] = h
    return best


def search_goal(goal: str, index: ToolIndex, top_k: int, among: Sequence[str] | None = None,
                halves: dict[str, SearchHit] | None = None, also: Sequence[str] = ()
                ) -> list[SearchHit]:
    """The `top_k` functions for `goal`, best first. A function scores its best similarity
    to the goal or one of its clauses (`goal_queries`), or, when it is a half's best
    function, to that half (`halves`, from `half_bests` among `among` when not given).
    `also`: more texts searched as the goal is (its translation, `translation.py`)."""
    if halves is None:
        halves = half_bests(goal, index, among, also)
    queries = list(dict.fromkeys(q for text in (goal, *also) for q in goal_queries(text)))
    hits = {h.qualified_name: h for h in index.search(queries, top_k=top_k, among=among)}
    for name, half in halves.items():
        if among is not None and name not in among:
            continue
        if name not in hits or hits[name].score < half.score:
            hits[name] = half
    return sorted(hits.values(), key=lambda h: (-h.score, h.qualified_name))[:top_k]


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
    goal: str, specs: Sequence[ToolSpec], options: FilterOptions, index: ToolIndex,
    translate: Callable[[str], str] | None = None,
) -> list[ScoredTool]:
    """The functions to offer for `goal`, best first.

    Syncs `specs` into the index without pruning (other registries' functions stay), then
    searches only among the allowed functions, so a stale entry can never be returned.
    A function's score is its best similarity to the goal or one of its clauses, or to a
    half of a long clause of which it is the best function (`search_goal`).
    `translate(goal)`: the goal in English (`translation.py`), searched as the goal is when
    `options.translate`; asked only once the options are known good and there is something
    to rank.
    """
    _check_unique(specs)
    _check_known(specs, options)
    allowed = [s for s in specs if options.allows(s)]
    if not allowed:
        return []
    english = translate(goal) if translate is not None and options.translate else ""
    also = [english] if english else []
    index.sync(specs, prune=False)
    by_name = {s.qualified_name: s for s in allowed}
    top_k = len(allowed)
    if options.max_relevant_functions is not None:
        top_k = min(top_k, options.max_relevant_functions)
    halves = half_bests(goal, index, list(by_name), also)
    hits = search_goal(goal, index, top_k, list(by_name), halves, also) if top_k else []
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
        for h in search_goal(goal, index, len(missing), missing, halves, also):
            kept[h.qualified_name] = ScoredTool(by_name[h.qualified_name], h.score)
    if options.whole_plugins and options.max_relevant_functions is not None:
        limit = options.max_relevant_functions + sum(
            _matches(s, options.included_functions) for s in allowed)
        siblings = whole_plugins(list(kept.values()), allowed, limit)
        if siblings:
            for h in search_goal(goal, index, len(siblings), siblings, halves, also):
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
