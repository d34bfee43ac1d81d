"""The tree plan constraint: one call whose arguments may be calls, nested up to a depth.

A call may stand as an argument only where its return type fits the parameter
(`types.fits`); a call with a `"field"` (a part of its result its return schema declares,
`grammar/fields.py`) only where that part's type fits, and the root may carry one (the
answer is that part). The recursion is unrolled into rules per level (`_TreeBuilder`), so the
grammar is finite; with stated values or numbers to cover, the covering rules
(`covering.py`) index those per-level rules by what the plan has covered so far.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.common import (
    DEFAULT_BOUNDS,
    cached,
    call_object,
    no_plan_call,
    render,
    steps_reasoning,
)
from localagent.grammar.covering import MAX_VALUES, CoveringRules, coverable
from localagent.grammar.fields import call_with_field
from localagent.grammar.jsonlark import Bounds, LarkRules, Schema, jtext, lit
from localagent.grammar.types import GrammarPath, field_paths, fits
from localagent.tools.spec import ToolSpec


@dataclass(frozen=True)
class _Options:
    """`tree_plan`'s options after it dropped what cannot apply (see its docstring)."""

    depth: int
    bounds: Bounds  # with max_items no larger than max_list
    reasoning_chars: int
    reasoning_steps: bool
    cover: tuple[str, ...]
    groups: tuple[int, ...]
    shallow: tuple[str, ...]
    numbers: tuple[float, ...]
    decline: bool = False


def tree_plan(tools: Sequence[ToolSpec], *, depth: int = 4, max_list: int = 4,
              reasoning_chars: int = 0, reasoning_steps: bool = False,
              cover: Sequence[str] = (), groups: Sequence[int] = (),
              shallow: Sequence[str] = (), numbers: Sequence[float] = (), decline: bool = False,
              bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """A call whose arguments may be calls (return type must fit), nested up to `depth`;
    optionally after a reasoning field (free text, or a list of real calls: `steps`).

    `max_list`: the most items of an array argument. `cover`: enum values that the plan
    must each pass to some call (grammar/covering.py; ignored unless 1..4 values);
    `groups`: the group of each of them (values the goal lists together), each group
    combined in one call before meeting the others.
    `shallow`: functions (arithmetic) that may stand only in the outer two levels, and in
    the second only with a call among their arguments (in the covering grammar: only where
    they first use a named value; a stated number alone does not count, or a nested
    `multiply(Lookup(x), 12)` could repeat a lookup of x that the plan already made).
    `numbers`: numbers the plan must each pass to some call (covering items after `cover`).
    """
    if depth < 1:
        raise ConstraintError("tree depth must be at least 1")
    cover = tuple(cover) if coverable(cover) else ()
    numbers = tuple(numbers)[:max(0, MAX_VALUES - len(cover))]
    options = {"depth": depth, "max_list": max_list, "reasoning": reasoning_chars,
               "bounds": bounds, "steps": reasoning_steps, "cover": cover,
               "groups": tuple(groups) if cover and len(groups) == len(cover) else (),
               "shallow": tuple(sorted(shallow)), "numbers": numbers, "decline": decline}
    resolved = _Options(
        depth=depth, bounds=Bounds(**{**vars(bounds),
                                      "max_items": min(bounds.max_items, max_list)}),
        reasoning_chars=reasoning_chars, reasoning_steps=reasoning_steps, cover=cover,
        groups=options["groups"], shallow=tuple(shallow),
        numbers=numbers, decline=decline)
    return cached("tree", tools, options, lambda: _TreeBuilder(tools, resolved).build())


class _TreeBuilder:
    """Unrolls the recursion: call rules per level, a call may stand at level L only where
    its return type fits and L <= depth.

    `covering.CoveringRules` builds on it (`tools`, `shallow`, `rules`, `depth`, `call`,
    `fit_rule`: its `TreeCalls`)."""

    def __init__(self, tools: Sequence[ToolSpec], options: _Options) -> None:
        self.o = options
        self.tools, self.depth = list(tools), options.depth
        self.shallow = {i for i, t in enumerate(self.tools)
                        if t.qualified_name in options.shallow}
        self.rules = LarkRules(options.bounds)
        self._calls: dict[tuple[int, int], str | None] = {}
        self._fits: dict[tuple[int, str], str | None] = {}
        self._args: dict[tuple[int, int], str] = {}
        self._fields: dict[tuple[int, int, tuple[GrammarPath, ...]], str | None] = {}

    def build(self) -> str:
        """The grammar text."""
        o = self.o
        roots = range(len(self.tools))
        if o.cover or o.numbers:
            calls = CoveringRules(self, o.cover, groups=o.groups,
                                  numbers=o.numbers).roots(roots)
            if not calls:
                raise ConstraintError("no plan can pass every named value and number "
                                      f"({', '.join(map(str, o.cover + o.numbers))}) "
                                      "to a call")
        else:
            calls = [c for c in (self.call(1, i) for i in roots) if c]
            calls += [c for c in (self.field_call(1, i, [p for p, _ in field_paths(
                self.tools[i].returns)]) for i in roots) if c]  # the answer: a part
        if not calls:
            raise ConstraintError("no function can be called: every argument schema admits "
                                  "no value")
        root = self.rules.define("call_1", " | ".join(calls))
        if o.decline:
            root = self.rules.define("plan_or_none", f"{root} | {no_plan_call()}")
        text = steps_reasoning(self.rules, self.tools) if o.reasoning_steps else (
            self.rules.string(o.reasoning_chars, 1) if o.reasoning_chars else "")
        start = (f'"{{\\"reasoning\\": " {text} ", \\"plan\\": " {root} "}}"'
                 if text else root)
        return render("tree", start=start, rules=self.rules.render())

    def call(self, level: int, i: int) -> str | None:
        """The rule for tool i at `level`, or None when its arguments admit no value here
        (an enum narrowed to nothing, with no call that fits at this depth)."""
        if (level, i) in self._calls:
            return self._calls[(level, i)]
        name = f"c{level}_{i}"
        self._calls[(level, i)] = name
        tool = self.tools[i]
        params = tool.parameters

        def hook(schema: Schema) -> str | None:
            return None if schema is params else self.fit_rule(level + 1, schema, params)

        every_required = set(params.get("required", [])) == set(params.get("properties") or {})
        if i in self.shallow and level >= 2 and every_required:
            args = self._args_with_a_call(level, i)
        else:
            args = self.rules.value(params, 0, hook, f"L{level}", root=params)
        if args is None:
            self._calls[(level, i)] = None
            return None
        self._args[(level, i)] = args
        self.rules.define(name, call_object("function", tool.qualified_name, "args", args))
        return name

    def field_call(self, level: int, i: int, paths: list[GrammarPath]) -> str | None:
        """Tool i's call at `level` with a `"field"`: one of `paths` of its result
        (`grammar/fields.py`); None when there is no path or no call."""
        key = (level, i, tuple(paths))
        if key not in self._fields:
            self._fields[key] = None
            if paths and self.call(level, i) and (level, i) in self._args:
                self._fields[key] = call_with_field(self.rules, self.tools[i],
                                                    self._args[(level, i)], paths)
        return self._fields[key]

    def _args_with_a_call(self, level: int, i: int) -> str | None:
        """Tool i's arguments with at least one call among them: the first call at
        argument k, literals before it (a nested `multiply(12, 100)` is arithmetic the
        plan need not do). Only for tools whose arguments are all required."""
        params = self.tools[i].parameters
        props: dict[str, Schema] = params.get("properties") or {}
        keys = list(props)
        plain = {k: self.rules.value(props[k], 1, None, "", root=params) for k in keys}
        calls = {k: self.fit_rule(level + 1, props[k], params) for k in keys}
        either = {k: " | ".join(x for x in (plain[k], calls[k]) if x) for k in keys}
        alts = []
        for j, key in enumerate(keys):
            parts = [plain[k] for k in keys[:j]] + [calls[key]] + [
                f"({either[k]})" if either[k] else None for k in keys[j + 1:]]
            if all(parts):
                body = ' ", " '.join(f"{lit(jtext(k) + ': ')} {p}" for k, p in zip(keys, parts))
                alts.append(f'"{{" {body} "}}"')
        return self.rules.add("shallow", " | ".join(alts)) if alts else None

    def fit_rule(self, level: int, schema: Schema, root: Schema) -> str | None:
        """The calls that may stand at `level` as an argument of `schema` (whose `$ref`s
        resolve against `root`), or None when none may."""
        if level > self.depth:
            return None
        key = (level, json.dumps(schema, sort_keys=True, default=str))
        if key not in self._fits:
            self._fits[key] = None  # guard against self-reference while building
            callees = [i for i, t in enumerate(self.tools)
                       if fits(schema, t.returns, root)
                       and not (i in self.shallow and level > 2)]
            names = [n for n in (self.call(level, i) for i in callees) if n]
            for i, t in enumerate(self.tools):  # a part of a result that fits (`field`)
                if not (i in self.shallow and level > 2):
                    parts = [p for p, sub in field_paths(t.returns) if fits(schema, sub, root)]
                    names += [n for n in (self.field_call(level, i, parts),) if n]
            self._fits[key] = self.rules.add("fit", " | ".join(names)) if names else None
        return self._fits[key]
