"""Tree-plan rules that must use every value the goal states (the `values` and `numbers`
techniques).

The contract: with `values`, every admitted plan passes each stated value to some call. A
plan that never passes one of the values the goal states cannot answer the goal, and a
small model often anchors on the first values it reads and drops the rest, so the grammar
admits no such plan.

How: "every named value appears" is a regular property of the sequence of enum literals
in the plan, so it can be intersected with the tree grammar (Bar-Hillel): every call and
value rule is indexed by the set of named values covered before it (`s`) and after it
(`t`, a superset; bit masks). An enum literal `v` moves `s` to `s | v`; every other
literal leaves it unchanged; the plan's root must go from nothing to all. Only string-enum
arguments count (the values a tool knows: a company, a currency), at most MAX_VALUES of
them (the rule count grows as 3^k). Inside a covering plan, arrays hold literals only (no
nested calls), and optional arguments take their usual rules (they cover nothing). A
call may carry a `"field"` (a part of its result, grammar/fields.py) wherever the plain
tree grammar admits one.

`groups` (values listed with marks only, "X, Y" or "X、Y"): values the goal lists together
form one constituent, as in the sentence. A call whose new values (those first used inside
it: `t & ~s`) lie in more than one group must hold each of those groups whole. So for
"the difference between the total of X, Y and the total of Z, W",
`Diff(Total(X, Y), Total(Z, W))` is admitted and `Diff(Get(X), Total(Get(Y), Total(Z, W)))`
is not (its outer Total takes Y from the pair X, Y together with Z and W). A value listed
with others is used once; a value named alone may be used twice (a density divides two
lookups of one country). The order of the values is free: "how many of currency B is 10
of currency A" is `Convert(10, A, B)`.

`numbers` (the `numbers` technique): numbers the goal states ("in 12 equal parts"), each
passed to some call; a number literal covers its item as an enum literal does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from localagent.grammar.common import call_object
from localagent.grammar.fields import call_with_field
from localagent.grammar.jsonlark import LarkRules, Schema, jtext, lit
from localagent.grammar.types import GrammarPath, field_paths, fits, string_enum
from localagent.tools.spec import ToolSpec

MAX_VALUES = 4


class TreeCalls(Protocol):
    """What the covering rules build on: the tree builder's tools, its rules and its
    uncovered call rules (`tree._TreeBuilder`)."""

    tools: list[ToolSpec]
    shallow: set[int]  # indices of the tools that stand only in the outer two levels
    rules: LarkRules
    depth: int

    def call(self, level: int, i: int) -> str | None:
        """Tool i's ordinary call rule at `level` (None: its arguments admit no value)."""
        ...

    def fit_rule(self, level: int, schema: Schema, root: Schema) -> str | None:
        """The ordinary calls that may stand at `level` where `schema` is expected."""
        ...

    def field_call(self, level: int, i: int, paths: list[GrammarPath]) -> str | None:
        """Tool i's ordinary call at `level` with a `"field"`, one of `paths`."""
        ...


def coverable(values: Sequence[str]) -> bool:
    """Whether the covering grammar applies to these named values."""
    return 0 < len(values) <= MAX_VALUES


class CoveringRules:
    """Builds the indexed rules into a tree builder's `LarkRules`; a tool without required
    arguments covers nothing and keeps the builder's own call rule."""

    def __init__(self, builder: TreeCalls, values: Sequence[str], *,
                 groups: Sequence[int] = (), numbers: Sequence[float] = ()) -> None:
        self.b = builder
        # the bit mask of each group's values (none: no grouping)
        self.groups: list[int] = [0] * (max(groups) + 1) if groups else []
        for k, g in enumerate(groups):
            self.groups[g] |= 1 << k
        # values listed with others are used once; a value named alone may be needed
        # twice (a density divides two lookups of one country)
        self.once = sum(g for g in self.groups if g & (g - 1))
        self.bit = {v: 1 << k for k, v in enumerate(values)}
        self.value_mask = (1 << len(values)) - 1
        # `numbers`: the numbers the goal states, items after the values
        self.number_bit = {float(n): 1 << (len(values) + k) for k, n in enumerate(numbers)}
        self.numbers = sum(self.number_bit.values())  # their mask
        self.full = (1 << (len(values) + len(numbers))) - 1
        self._calls: dict[tuple[int, int, int, int], str | None] = {}
        self._values: dict[tuple[int, str, int, int, int | None], str | None] = {}
        self._seqs: dict[tuple[int, int, int, int, int], str | None] = {}

    def roots(self, tools: Sequence[int]) -> list[str]:
        """The level-1 calls of `tools` (indices) that cover every named value, each also
        with a `"field"` where its result declares parts (the answer is that part)."""
        calls = [self.call(1, i, 0, self.full) for i in tools]
        calls += [self.call(1, i, 0, self.full, tuple(p for p, _ in field_paths(
            self.b.tools[i].returns))) for i in tools]
        return [c for c in calls if c]

    def call(self, level: int, i: int, s: int, t: int,
             paths: tuple[GrammarPath, ...] = ()) -> str | None:
        """Tool i at `level`, moving the covered set from `s` to `t`; with `paths`, the
        call with a `"field"`, one of them (None when it has none)."""
        key = (level, i, s, t, paths)
        if self.groups and not self._constituent(t & ~s & self.value_mask):
            return None
        if i in self.b.shallow and (level > 2 or (level == 2 and not t & ~s & ~self.numbers)):
            return None  # nested arithmetic must bring in something named (`shallow`)
        if key not in self._calls:
            self._calls[key] = None  # recursion guard
            self._calls[key] = self._build_call(level, i, s, t, paths) if t & s == s else None
        return self._calls[key]

    def _constituent(self, new: int) -> bool:
        """Whether a call may first use the values `new` (a mask): part of one group, or
        whole groups."""
        touched = [g for g in self.groups if g & new]
        return len(touched) <= 1 or all(g & new == g for g in touched)

    def _build_call(self, level: int, i: int, s: int, t: int,
                    paths: tuple[GrammarPath, ...]) -> str | None:
        """Tool i at `level` whose arguments move the covered set from `s` to `t` (with
        a `"field"` of `paths` when given)."""
        tool = self.b.tools[i]
        params = tool.parameters
        props: dict[str, Schema] = params.get("properties") or {}
        required = _required(params)
        if not required:
            if s != t:
                return None
            return self.b.field_call(level, i, list(paths)) if paths else self.b.call(level, i)
        first = self._seq(level, i, 0, s, t)
        if first is None:
            return None
        tail = []
        for k, schema in props.items():
            if k in required:
                continue
            v = self.b.rules.value(schema, 1, lambda sch: self.b.fit_rule(
                level + 1, sch, params), f"L{level}", root=params)
            if v:
                tail.append(f'(", " {lit(jtext(k) + ": ")} {v})?')
        args = " ".join(['"{"', first, *tail, '"}"'])
        if paths:
            return call_with_field(self.b.rules, tool, args, list(paths), f"ccf{level}")
        return self.b.rules.add(f"cc{level}", call_object(
            "function", tool.qualified_name, "args", args))

    def _seq(self, level: int, i: int, p: int, s: int, t: int) -> str | None:
        """Required arguments p.. of tool i (", "-separated), moving `s` to `t`."""
        key = (level, i, p, s, t)
        if key in self._seqs:
            return self._seqs[key]
        params = self.b.tools[i].parameters
        props = params["properties"]
        required = _required(params)
        name = required[p]
        head = lit(jtext(name) + ": ")
        alts = []
        if p == len(required) - 1:
            v = self.value(level, props[name], s, t, params)
            if v:
                alts.append(f"{head} {v}")
        else:
            for m in _between(s, t):
                v = self.value(level, props[name], s, m, params)
                rest = self._seq(level, i, p + 1, m, t) if v else None
                if v and rest:
                    alts.append(f'{head} {v} ", " {rest}')
        rule = self.b.rules.add("cseq", " | ".join(alts)) if alts else None
        self._seqs[key] = rule
        return rule

    def value(self, level: int, schema: Schema, s: int, t: int,
              root: Schema) -> str | None:
        """An argument value of `schema` in a call at `level`, moving `s` to `t`."""
        key = (level, json.dumps(schema, sort_keys=True, default=str) + str(id(root)), s, t)
        if key in self._values:
            return self._values[key]
        self._values[key] = None
        alts: list[str] = []
        enum = string_enum(schema)
        numbers = _number_enum(schema)
        if enum:
            alts += [lit(jtext(v)) for v in enum if t == s | self.bit.get(v, 0)
                     and not self.bit.get(v, 0) & self.once & s]
        elif numbers is not None:  # `mentions` narrowed a number to the goal's and constants
            alts += [lit(jtext(v)) for v in numbers
                     if t == s | self.number_bit.get(float(v), 0)]
        elif s == t:
            plain = self.b.rules.value(schema, 1, None, "", root=root)
            if plain:
                alts.append(plain)
        if level + 1 <= self.b.depth:
            for j, tool in enumerate(self.b.tools):
                if fits(schema, tool.returns, root):
                    alts.append(self.call(level + 1, j, s, t) or "")
                parts = tuple(p for p, sub in field_paths(tool.returns)
                              if fits(schema, sub, root))  # a part of its result fits
                if parts:
                    alts.append(self.call(level + 1, j, s, t, parts) or "")
            alts = [a for a in alts if a]
        rule = self.b.rules.add("cv", " | ".join(dict.fromkeys(alts))) if alts else None
        self._values[key] = rule
        return rule


def _number_enum(schema: Schema) -> list[float] | None:
    """The values of a number argument narrowed to a list (None: not one)."""
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if schema.get("type") in ("number", "integer") and isinstance(enum, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in enum):
        return enum
    return None


def _required(params: Schema) -> list[str]:
    """The required arguments in schema order (the order jsonlark writes them)."""
    needed = set(params.get("required", []))
    return [k for k in params.get("properties") or {} if k in needed]


def _between(s: int, t: int) -> list[int]:
    """Every m with s <= m <= t as sets (s a subset of m, m a subset of t)."""
    free = t & ~s
    out, m = [], free
    while True:
        out.append(s | m)
        if m == 0:
            return out
        m = (m - 1) & free
