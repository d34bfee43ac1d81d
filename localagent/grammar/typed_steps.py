"""Step lists whose `$k` references are typed (the sequential planner's `typed` technique).

The contract: a step reference `"$k"` stands only where step k's result fits the argument
(`types.fits`, the rule a nested call obeys in a tree plan), so a sequential plan cannot
pass a lookup's name to arithmetic or a measurement to a lookup by name: plans a tree
grammar could not write either.

A context-free grammar cannot look back at which function step k called, so the rule for
"step k onward" is one rule per *state*: the return class of each earlier step. Tools
whose results fit the same argument schemas share a class (ten tools typically fall into
2 to 5), so step k has at most C^(k-1) states, each with a call rule per tool. To bound
the grammar, only the first steps' classes are tracked: as many as keep the states times
the argument slots of every tool (`tracked_steps`) within `MAX_CALL_RULES`; a step after
those is untracked, and a reference to it stands wherever any reference may. So ten tools
(14 slots) in 5 classes are tracked for 4 steps of 6, 28 tools (34 slots, 9 classes) for
2; where not even one step can be tracked (200 tools), `typed` changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from localagent.errors import ConstraintError
from localagent.grammar.fields import FieldRules, RefItem, finish
from localagent.grammar.jsonlark import Bounds, LarkRules, Schema
from localagent.grammar.types import GrammarPath, field_paths, fits
from localagent.tools.spec import ToolSpec

MAX_CALL_RULES = 20_000
MAX_FIELD_RULES = 8_000
"""Rules a typed step list may add when parts of results split its classes (measured:
8 tools in 5 classes tracked for 3 steps made 14.5k rules, past llguidance's 64k symbols;
for 2 steps, 4k compiled)."""
FIELD_WEIGHT = 4
"""How many call rules a call rule counts for when references may name parts of results
(`$1.total`): each admitted part is one more alternative in every argument rule, and the
ordered/distinct argument rules multiply them (measured: 17 tools of which one returns an
object tracked for 5 steps compiled to ~25k rules, past llguidance's 64k symbols)."""
RefsFor = Callable[[Schema, Schema], list[RefItem]]
"""Given an argument schema and its tool's parameters, the steps a reference may name
(`j`: step j's result; `(j, path)`: the part of it at `path`, `"$j.total"`)."""
CallRule = Callable[[int, int, RefsFor, str], "str | None"]
"""Given a step, a tool index, the references it may take and a rule tag: its call rule."""
UNTRACKED = -1


class ReturnClasses:
    """Tools grouped by the argument schemas their results, and the parts of their
    results a reference may name (`fields.result_views`), fit.

    The schemas are the ones the argument rules ask about (`probe`): the same walk over
    each tool's parameters that builds its rules, so every question the grammar asks has
    its answer in a class's signature: the (probe, path) pairs where the part of the
    result at `path` (`()`: all of it) fits the probed schema.
    """

    def __init__(self, tools: Sequence[ToolSpec], bounds: Bounds, *,
                 fields: bool = True) -> None:
        self.fields = fields  # False: references take results whole only
        self.probes = _argument_schemas(tools, bounds)
        returns = [json.dumps(t.returns, sort_keys=True, default=str) for t in tools]
        by_returns: dict[str, frozenset[tuple[int, GrammarPath]]] = {}  # alike fit alike
        for tool, text in zip(tools, returns):
            if text not in by_returns:
                by_returns[text] = frozenset(self._fitting(tool.returns))
        ids: dict[frozenset[tuple[int, GrammarPath]], int] = {}
        self.of_tool = [ids.setdefault(by_returns[text], len(ids)) for text in returns]
        self._sigs = list(ids)
        self._paths: list[dict[int, list[GrammarPath]]] = []
        for sig in self._sigs:
            by_probe: dict[int, list[GrammarPath]] = {}
            for n, path in sorted(sig, key=lambda pair: (pair[0], len(pair[1]), str(pair[1]))):
                by_probe.setdefault(n, []).append(path)
            self._paths.append(by_probe)
        self._index = {_key(schema, root): n for n, (schema, root) in enumerate(self.probes)}
        self._of_params: dict[int, list[tuple[Schema, Schema]]] = {}
        for schema, root in self.probes:
            self._of_params.setdefault(id(root), []).append((schema, root))
        self._returns = {c: tools[i].returns for i, c in reversed(list(enumerate(self.of_tool)))}

    def _fitting(self, returns: Schema) -> list[tuple[int, GrammarPath]]:
        """The (probe, path) pairs where that part of a result fits; where the whole
        result fits a probe, only the whole (a part adds nothing a reference needs
        there, and would split classes that fit alike: fewer steps could be tracked)."""
        out = []
        for n, (schema, root) in enumerate(self.probes):
            if fits(schema, returns, root):
                out.append((n, ()))
            elif self.fields:
                out += [(n, path) for path, part in field_paths(returns)
                        if fits(schema, part, root)]
        return out

    def probes_of(self, params: Schema) -> list[tuple[Schema, Schema]]:
        """The probed schemas inside one tool's parameters."""
        return self._of_params.get(id(params), [])

    @property
    def has_fields(self) -> bool:
        """Whether parts of results split the classes (a number field of an object, into
        arithmetic): more classes than the whole results alone would make."""
        wholes = {frozenset(n for n, path in sig if path == ()) for sig in self._sigs}
        return len(wholes) < len(self._sigs)

    @property
    def count(self) -> int:
        return len(self._sigs)

    def admits(self, schema: Schema, root: Schema, cls: int) -> bool:
        """Whether a result of class `cls`, or a part of it, may stand where `schema` is
        expected."""
        return bool(self.paths(schema, root, cls))

    def paths(self, schema: Schema, root: Schema, cls: int) -> list[GrammarPath]:
        """The parts of a result of class `cls` that may stand where `schema` is expected
        (`()`: the whole result); an untracked step's result only whole."""
        if cls == UNTRACKED:
            return [()]
        n = self._index.get(_key(schema, root))
        if n is None:  # not met by the probe: judge by one tool of the class
            returns = self._returns[cls]
            if fits(schema, returns, root):
                return [()]
            if not self.fields:
                return []
            return [p for p, part in field_paths(returns) if fits(schema, part, root)]
        return self._paths[cls].get(n, [])


class TypedSteps:
    """Builds the subtask list: one rule per (step, state); a state is the classes of the
    steps so far. A plan may end on any step's call."""

    def __init__(self, rules: LarkRules, tools_at: Sequence[Sequence[ToolSpec]],
                 call: CallRule, *, bounds: Bounds | None = None,
                 fields: bool = True) -> None:
        self.rules, self.tools_at, self.call = rules, tools_at, call
        probed = list({id(ts): ts for ts in tools_at}.values())
        self.classes = ReturnClasses([t for ts in probed for t in ts], bounds or rules.bounds,
                                     fields=fields)
        self.of_tool = self.classes.of_tool[:len(tools_at[0])]
        hooks = sum(max(1, len(self.classes.probes_of(t.parameters))) for t in tools_at[-1])
        hooks *= FIELD_WEIGHT if self.classes.has_fields else 1
        self.tracked = tracked_steps(self.classes.count, len(tools_at), hooks)
        self._memo: dict[tuple[int, tuple[int, ...]], str | None] = {}
        self._calls: dict[tuple[int, int, tuple], str | None] = {}
        self._views: dict[tuple, int] = {}

    def build(self) -> str:
        # Parts of results make the rules per state hard to foresee: where they split the
        # classes and the rules outgrow MAX_FIELD_RULES, track one step fewer and rebuild.
        snapshot = self.rules.snapshot() if isinstance(self.rules, FieldRules) else None
        first = self._tail(1, ())
        while (snapshot is not None and self.classes.has_fields and self.tracked > 0
               and self.rules.size() - snapshot.size > MAX_FIELD_RULES):
            self.rules.restore(snapshot)
            self.tracked -= 1
            self._memo.clear()
            self._calls.clear()
            self._views.clear()
            first = self._tail(1, ())
        if first is None:
            raise ConstraintError(f"no plan of at most {len(self.tools_at)} steps can end on "
                                  "a function that may end it")
        return first

    def _tail(self, k: int, state: tuple[int, ...]) -> str | None:
        key = (k, state)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None
        branches: dict[int, list[str]] = {}
        ends = []
        for i in range(len(self.tools_at[k - 1])):
            call = self._call(k, i, state)
            if call is None:
                continue
            ends.append(finish(self.rules, call))  # the answer may be a part of it
            cls = self.of_tool[i] if len(state) < self.tracked else UNTRACKED
            branches.setdefault(cls, []).append(call)
        alts = [" | ".join(ends)] if ends else []
        if k < len(self.tools_at):
            for cls, calls in branches.items():
                rest = self._tail(k + 1, state + (cls,))
                if rest:
                    alts.append(f'({" | ".join(calls)}) ", " {rest}')
        self._memo[key] = self.rules.add(f"typed{k}", " | ".join(alts)) if alts else None
        return self._memo[key]

    def _call(self, k: int, i: int, state: tuple[int, ...]) -> str | None:
        """Tool i's call rule at step k after `state`; shared by every state in which the
        same earlier steps may feed it (its `view`)."""
        tools = self.tools_at[k - 1]
        params = tools[i].parameters
        probes = self.classes.probes_of(params)
        view = tuple((j, cls) for j, cls in enumerate(state, 1) if probes and (
            cls == UNTRACKED or any(self.classes.admits(s, r, cls) for s, r in probes)))
        key = (id(tools), i, view)
        if key not in self._calls:
            self._calls[key] = None

            def refs_for(schema: Schema, root: Schema) -> list[RefItem]:
                return [(j, path) if path else j for j, cls in view
                        for path in self.classes.paths(schema, root, cls)]

            # rules of equal argument schemas are shared by every tool with this view
            tag = f"y{self._views.setdefault(view, len(self._views))}"
            self._calls[key] = self.call(k, i, refs_for, tag)
        return self._calls[key]


def state_count(classes: int, tracked: int, max_steps: int) -> int:
    """The states of a step list whose first `tracked` steps' classes are recorded:
    C^(k-1) for step k, no more than C^tracked."""
    return sum(classes ** min(k, tracked) for k in range(max_steps))


def tracked_steps(classes: int, max_steps: int, rules_per_state: int) -> int:
    """How many leading steps' classes the states record: the most for which every state
    times `rules_per_state` (the tools' argument slots) stays within
    MAX_CALL_RULES (0: none). The last step's class is never needed."""
    tracked = 0
    while (tracked < max_steps - 1 and rules_per_state
           * state_count(classes, tracked + 1, max_steps) <= MAX_CALL_RULES):
        tracked += 1
    return tracked


def _argument_schemas(tools: Sequence[ToolSpec], bounds: Bounds) -> list[tuple[Schema, Schema]]:
    """(schema, parameters) for every value schema inside each tool's parameters at which
    an argument rule may take a reference."""
    seen: list[tuple[Schema, Schema]] = []
    rules = LarkRules(bounds)
    for n, tool in enumerate(tools):
        params = tool.parameters

        def record(schema: Schema, params: Schema = params) -> None:
            if schema is not params:
                seen.append((schema, params))

        rules.value(params, 0, record, f"probe{n}", root=params)
    return seen


def _key(schema: Schema, root: Schema) -> tuple[str, int]:
    return json.dumps(schema, sort_keys=True, default=str), id(root)
