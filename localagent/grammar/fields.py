"""Grammar rules for field access into structured results (`"$1.total"`, `"field": ...`).

A plan may take a part of an earlier result: a sequential step reference with a path
(`"$2[0].price"`), or a call with a `"field"` key (`{"function": ..., "args": ...,
"field": "items[0].price"}`: the tree's nested calls and root, a sequential plan's last
step). The grammars offer exactly the parts a tool's return schema declares
(`types.field_paths`: bounded depth, list indexes 0..MAX_INDEX, a bounded identifier for an
object that declares no keys), each where its own schema `fits` the parameter, so the
grammar stays finite and a `str` field never stands for a number.

Each path is emitted as one terminal (a literal, or one regex where it has a wildcard), so
the lexer never has to choose between a bare reference and the start of a longer one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.common import call_object
from localagent.grammar.jsonlark import LarkRules, Schema, jtext, lit
from localagent.grammar.types import (
    ANY_INDEX,
    ANY_KEY,
    MAX_INDEX,
    GrammarPath,
    field_paths,
)
from localagent.tools.spec import ToolSpec

RefItem = int | tuple[int, GrammarPath]
"""What a step reference may name: step j whole (`j`), or a part of it (`(j, path)`)."""
MAX_UNTYPED_PATHS = 16
_KEY_RE = "[A-Za-z_][A-Za-z0-9_]{0,31}"


def ref_step(item: RefItem) -> int:
    """The step a reference item names."""
    return item if isinstance(item, int) else item[0]


def ref_lark(item: RefItem) -> str:
    """The Lark terminal of the JSON string `"$j<path>"` (`"$1"`, `"$2[0].price"`)."""
    step, path = (item, ()) if isinstance(item, int) else item
    return _json_string(f"${step}", path, lead=True)


def field_lark(path: GrammarPath) -> str:
    """The Lark terminal of the JSON string of a call's field (`"items[0].price"`)."""
    return _json_string("", path, lead=False)


def _json_string(prefix: str, path: GrammarPath, lead: bool) -> str:
    if all(p not in (ANY_KEY, ANY_INDEX) for p in path):
        text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        return lit(jtext(prefix + (text if lead or not text else text.removeprefix("."))))
    parts = [re.escape(prefix).replace("#", "\\#")]
    for n, part in enumerate(path):
        dot = "\\." if lead or n else ""
        if part == ANY_INDEX:
            parts.append(f"\\[[0-{MAX_INDEX}]\\]")
        elif part == ANY_KEY:
            parts.append(dot + _KEY_RE)
        else:
            parts.append(dot + str(part))
    return f'/"{"".join(parts)}"/'


def result_views(returns: Schema) -> list[tuple[GrammarPath, Schema]]:
    """The whole result (path `()`) and each part a grammar offers (`types.field_paths`)."""
    return [((), returns)] + field_paths(returns)


def keyed_object(returns: Schema) -> bool:
    """Whether a result is an object that declares its keys (a pydantic model, a
    TypedDict, a JSON schema with `properties`): its first offered part is a named key
    (`types.field_paths`), not a list index or the wildcard key of an untyped dict."""
    paths = field_paths(returns)
    return bool(paths) and isinstance(paths[0][0][0], str) and paths[0][0][0] != ANY_KEY


def part_choice(returns: Schema) -> Constraint:
    """Only `, "field": "<path>"`, one of the parts `field_paths` offers of a result of
    schema `returns`: the continuation that makes a call written up to its arguments take
    a part of its result (a plan's last step, `planners/sequential.py`)."""
    alts = [field_lark(p) for p, _ in field_paths(returns)]
    if not alts:
        raise ConstraintError("the result declares no part to take")
    text = f'start: {lit(", " + jtext("field") + ": ")} ({" | ".join(alts)})'
    return Constraint(kind="lark", source=text, name="part-choice")


def untyped_paths(tools: Sequence[ToolSpec]) -> list[GrammarPath]:
    """The paths an untyped step reference may take: `()` and every part some offered tool
    declares (at most MAX_UNTYPED_PATHS); which tool a step called is unknown to such a
    grammar, so the plan check judges the path against it before the plan runs."""
    out: dict[GrammarPath, None] = {(): None}
    for tool in tools:
        for path, _ in field_paths(tool.returns):
            if len(out) >= MAX_UNTYPED_PATHS:
                return list(out)
            out.setdefault(path, None)
    return list(out)


def field_suffix(rules: LarkRules, paths: Sequence[GrammarPath]) -> str | None:
    """The rule for `, "field": "<one of paths>"` (None when there is none)."""
    alts = [field_lark(p) for p in dict.fromkeys(paths) if p]
    if not alts:
        return None
    return rules.add("field", f'{lit(", " + jtext("field") + ": ")} ({" | ".join(alts)})')


def call_with_field(rules: LarkRules, tool: ToolSpec, args: str,
                    paths: Sequence[GrammarPath], prefix: str = "cf") -> str | None:
    """`{"function": "<tool>", "args": <args>, "field": "<one of paths>"}` (None: no path)."""
    suffix = field_suffix(rules, paths)
    if suffix is None:
        return None
    return rules.add(prefix, call_object("function", tool.qualified_name, "args",
                                         f"{args} {suffix}"))


@dataclass(frozen=True)
class RulesSnapshot:
    """A copy of a `FieldRules`' state (`FieldRules.snapshot`)."""

    rules: dict[str, str]
    by_key: dict[Any, str | None]
    counter: int
    calls: dict[str, tuple[ToolSpec, str]]
    finals: dict[str, str]

    @property
    def size(self) -> int:
        return len(self.rules)


class FieldRules(LarkRules):
    """LarkRules that remember each call rule's tool and argument rule, so a plan's final
    step can also be written with a `"field"` (`finish`): the answer is that part."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._calls: dict[str, tuple[ToolSpec, str]] = {}
        self._finals: dict[str, str] = {}

    def size(self) -> int:
        """How many rules there are."""
        return len(self._rules)

    def snapshot(self) -> RulesSnapshot:
        """The state to `restore` if what is built next is thrown away."""
        return RulesSnapshot(dict(self._rules), dict(self._by_key), self._counter,
                             dict(self._calls), dict(self._finals))

    def restore(self, snap: RulesSnapshot) -> None:
        self._rules, self._by_key, self._counter = dict(snap.rules), dict(snap.by_key), \
            snap.counter
        self._calls, self._finals = dict(snap.calls), dict(snap.finals)

    def remember(self, name: str, tool: ToolSpec, args: str) -> None:
        self._calls[name] = (tool, args)

    def finish(self, name: str) -> str:
        """`name`, or `(name | its variant with a field)` where its tool declares parts."""
        if name not in self._finals:
            self._finals[name] = name
            if name in self._calls:
                tool, args = self._calls[name]
                paths = [p for p, _ in field_paths(tool.returns)]
                variant = call_with_field(self, tool, args, paths, prefix="fin")
                if variant:
                    self._finals[name] = f"({name} | {variant})"
        return self._finals[name]


def finish(rules: LarkRules, name: str) -> str:
    """`FieldRules.finish` where `rules` remembers its calls; `name` otherwise."""
    return rules.finish(name) if isinstance(rules, FieldRules) else name
