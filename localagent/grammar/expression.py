"""The tree plan as one call expression: `P.Diff(a=P.Total(x="C"), b=2)` (issue 22).

The same typed nesting as the JSON tree grammar (`grammar/tree.py`): a call stands as an
argument only where its return type fits the parameter (`types.fits`), unrolled per level
up to `depth`, and a call may take a part of its result with subscripts
(`P.GetCar(plate="K-77")["owner"]["name"]`, `grammar/fields.py`'s paths). Argument values
are JSON written by the same bounded rules (`jsonlark`). What it leaves out: the covering
options, `shallow` and the reasoning field; `plan_expression.parse_expression` reads what
it admits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.common import DEFAULT_BOUNDS, cached, render
from localagent.grammar.jsonlark import Bounds, LarkRules, Schema, lit
from localagent.grammar.types import ANY_INDEX, ANY_KEY, GrammarPath, field_paths, fits
from localagent.tools.spec import ToolSpec


def expression_plan(tools: Sequence[ToolSpec], *, depth: int = 4, max_list: int = 4,
                    bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """One call expression over `tools`, nested at most `depth` levels; arrays of at most
    `max_list` items."""
    if depth < 1:
        raise ConstraintError("tree depth must be at least 1")
    bounds = Bounds(**{**vars(bounds), "max_items": min(bounds.max_items, max_list)})
    options = {"depth": depth, "bounds": bounds}
    return cached("expression", tools, options,
                  lambda: _ExpressionBuilder(tools, depth, bounds).build())


class _ExpressionBuilder:
    def __init__(self, tools: Sequence[ToolSpec], depth: int, bounds: Bounds) -> None:
        self.tools, self.depth = list(tools), depth
        self.rules = LarkRules(bounds)
        self._calls: dict[tuple[int, int], str | None] = {}
        self._fits: dict[tuple[int, str], str | None] = {}

    def build(self) -> str:
        calls = [c for i in range(len(self.tools)) for c in (self.call(1, i), *self.parts(
            1, i, [p for p, _ in field_paths(self.tools[i].returns)])) if c]
        if not calls:
            raise ConstraintError("no function can be called: every argument schema admits "
                                  "no value")
        return render("expression", start=self.rules.define("call_1", " | ".join(calls)),
                      rules=self.rules.render())

    def call(self, level: int, i: int) -> str | None:
        """`P.F(a=..., b=...)` for tool i at `level`; None when its arguments admit no value."""
        if (level, i) in self._calls:
            return self._calls[(level, i)]
        self._calls[(level, i)] = None  # guard: a call cannot contain itself at one level
        tool = self.tools[i]
        params = tool.parameters
        props: dict[str, Schema] = params.get("properties") or {}
        required = [k for k in props if k in set(params.get("required", []))]

        def hook(schema: Schema) -> str | None:
            return self.fit_rule(level + 1, schema, params)

        pairs: dict[str, str] = {}
        for key, schema in props.items():
            value = self.rules.value(schema, 1, hook, f"E{level}", root=params)
            if value is None and key in required:
                return None
            if value is not None:
                pairs[key] = f"{lit(key + '=')} {value}"
        optional = [k for k in props if k not in required and k in pairs]
        body = _arguments(required, optional, pairs)
        name = self.rules.define(f"e{level}_{i}", f"{lit(tool.qualified_name + '(')} "
                                 f"{body} {lit(')')}" if body else
                                 lit(tool.qualified_name + "()"))
        self._calls[(level, i)] = name
        return name

    def parts(self, level: int, i: int, paths: list[GrammarPath]) -> list[str]:
        """Tool i's call at `level` followed by one of `paths` as subscripts."""
        call = self.call(level, i)
        if call is None or not paths:
            return []
        suffixes = [" ".join(_subscript(p) for p in path) for path in paths]
        rule = self.rules.add("part", f"{call} ({' | '.join(suffixes)})")
        return [rule]

    def fit_rule(self, level: int, schema: Schema, root: Schema) -> str | None:
        """The calls (or parts of results) that may stand at `level` as a value of `schema`."""
        if level > self.depth:
            return None
        key = (level, json.dumps(schema, sort_keys=True, default=str))
        if key not in self._fits:
            self._fits[key] = None
            names = [n for i, t in enumerate(self.tools) if fits(schema, t.returns, root)
                     for n in (self.call(level, i),) if n]
            for i, t in enumerate(self.tools):
                paths = [p for p, sub in field_paths(t.returns) if fits(schema, sub, root)]
                names += self.parts(level, i, paths)
            self._fits[key] = self.rules.add("fit", " | ".join(names)) if names else None
        return self._fits[key]


def _subscript(part: str | int) -> str:
    if part == ANY_INDEX:
        return '"[" /[0-9]{1,2}/ "]"'
    if part == ANY_KEY:  # an object that declares no keys: any identifier
        return " ".join([lit('["'), "/[A-Za-z_][A-Za-z0-9_]{0,39}/", lit('"]')])
    return lit(f"[{json.dumps(part)}]")


def _arguments(required: list[str], optional: list[str], pairs: dict[str, str]) -> str:
    """`k=v` pairs in schema order, required first, each optional one may be left out;
    "" when there are none."""
    if required:
        rest = [f'", " {pairs[k]}' for k in required[1:]]
        rest += [f'(", " {pairs[k]})?' for k in optional]
        return " ".join([pairs[required[0]], *rest])
    if not optional:
        return ""
    alts = [" ".join([pairs[k], *(f'(", " {pairs[j]})?' for j in optional[n + 1:])])
            for n, k in enumerate(optional)]
    return "(" + " | ".join(alts) + ")?"
