"""JSON Schema (the subset tool signatures use) to bounded Lark rules for llguidance.

Why our own emitter instead of `%json {...}`: llguidance's JSON numbers have unbounded
digits and free-form values have unbounded depth, which is how a small model loops until
`max_tokens` (DESIGN.md Trap 2). Here every repetition has a bound (`Bounds`), whitespace
is fixed (`", "` and `": "`; or bounded, `pretty`), and the tree-plan builder can put a nested call wherever a
value of the right type may stand (the `hook`).

Rules are memoised by (schema, depth, hook), so a tool set compiles to one rule per
distinct argument type, not one per occurrence. Every `value()` call names its `root`: the
schema whose `$defs` a `$ref` inside it resolves against (a tool's parameters).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localagent.errors import ConstraintError

Schema = dict[str, Any]
Hook = Callable[[Schema], "str | None"]
"""Given a value's schema, the name of a rule that may also stand there (or None)."""


@dataclass(frozen=True)
class Bounds:
    """Upper bounds on everything that repeats, so every output is finite and short."""

    max_string: int = 120  # characters of a JSON string that has no smaller maxLength
    max_digits: int = 15  # integer digits of a number
    max_fraction: int = 6  # digits after the decimal point
    max_items: int = 32  # items of an array that has no smaller maxItems (BFCL: lists of 12)
    max_props: int = 6  # keys of a free-form object
    max_depth: int = 3  # nesting of free-form JSON values and recursive $refs
    max_text: int = 160  # characters of free text (thought, reasoning, answers)


# The letters of the world's scripts beyond ASCII, so a goal's names and a value in any
# language can be written: Latin, Greek, Cyrillic, Hebrew, Arabic, Devanagari, Thai, CJK
# punctuation, kana, CJK ideographs, Hangul and full-width forms. Free text and strings
# exclude emoji and symbols on purpose: a small model can fill a character budget with
# emoji at several tokens each and run past max_tokens, so a bound in characters would no
# longer bound tokens (a letter of these scripts is one or two tokens).
WIDE = ("\u00a0-\u024f\u0370-\u03ff\u0400-\u04ff\u0590-\u05ff\u0600-\u06ff"
        "\u0900-\u097f\u0e00-\u0e7f\u3000-\u30ff\u4e00-\u9fff\uac00-\ud7af"
        "\uff00-\uffef")
PRETTY_SPACE = 24  # whitespace characters after a bracket, comma or colon (pretty JSON)
TEXT_CHAR = f"[\\x20-\\x7e{WIDE}]"  # printable, one line
FIRST_CHAR = f"[\\x21-\\x7e{WIDE}]"  # printable, not a space
JSON_CHAR = f"[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e{WIDE}]"  # no quote, no backslash


@functools.lru_cache(maxsize=256)
def _string_compiles(regex: str | None, fmt: str | None) -> bool:
    """Whether llguidance takes a JSON schema string's `pattern` (not lookarounds, not
    backreferences) and `format`: a tool's schema with one it cannot take keeps a plain
    string, checked by the validator alone, rather than breaking every grammar the tool is
    offered in."""
    import llguidance

    spec: dict[str, Any] = {"type": "string"}
    if regex is not None:
        spec["pattern"] = regex
    if fmt is not None:
        spec["format"] = fmt
    grammar = llguidance.LLMatcher.grammar_from_json_schema(spec)
    return not llguidance.LLMatcher.validate_grammar(grammar)  # "" or the error


def lit(text: str) -> str:
    """A Lark string literal for `text` (quotes, backslashes, unicode all survive)."""
    return json.dumps(text, ensure_ascii=False)


def jtext(value: Any) -> str:
    """The exact JSON text we emit for a constant value (compact separators)."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class LarkRules:
    """Accumulates named Lark rules; `value()` returns a Lark expression for a schema."""

    def __init__(self, bounds: Bounds, *, pretty: bool = False) -> None:
        """`pretty`: JSON may also be written with line breaks and indentation after
        brackets, commas and colons (at most `PRETTY_SPACE` whitespace characters each), as
        a chat model writes a call in a ```json fence; else the fixed `", "`, `": "`."""
        self.bounds = bounds
        self.pretty = pretty
        self.comma, self.colon = ('"," ws?', '":" ws?') if pretty else ('", "', '": "')
        self.open_obj, self.close_obj = ('"{" ws?', 'ws? "}"') if pretty else ('"{"', '"}"')
        self.open_arr, self.close_arr = ('"[" ws?', 'ws? "]"') if pretty else ('"["', '"]"')
        self._rules: dict[str, str] = {}
        self._by_key: dict[tuple[str, int, str], str | None] = {}
        self._counter = 0

    # --- rule bookkeeping -----------------------------------------------------------

    def add(self, prefix: str, body: str) -> str:
        self._counter += 1
        name = f"{prefix}_{self._counter}"
        self._rules[name] = body
        return name

    def define(self, name: str, body: str) -> str:
        if name in self._rules:
            raise ConstraintError(f"duplicate grammar rule {name}")
        self._rules[name] = body
        return name

    def render(self) -> str:
        rules = [f"{name}: {body}" for name, body in self._rules.items()]
        if self.pretty:
            rules.append(f"ws: /[ \\t\\n]{{1,{PRETTY_SPACE}}}/")
        return "\n".join(rules)

    def key(self, name: str) -> str:
        """An object key and its colon."""
        return f"{lit(jtext(name))} {self.colon}" if self.pretty else lit(jtext(name) + ": ")

    # --- terminals --------------------------------------------------------------------

    def string(self, max_len: int | None = None, min_len: int = 0) -> str:
        n = min(max_len if max_len is not None else self.bounds.max_string,
                self.bounds.max_string)
        n = max(n, min_len)
        char = f'(?:{JSON_CHAR}|\\\\["\\\\bfnrt]|\\\\u[0-9a-fA-F]{{4}})'
        return f'/"{char}{{{min_len},{n}}}"/'

    def pattern(self, regex: str | None, max_len: int | None = None, min_len: int = 0,
                fmt: str | None = None) -> str:
        """A JSON string whose value matches `regex` (JSON Schema's `pattern`: a match
        anywhere unless anchored; an Outlines `Regex` parameter arrives anchored, see
        tools/schema.py), within the string bound. llguidance's own JSON string rule does
        the escaping, so a pattern that admits quotes or backslashes still writes valid
        JSON. A `format` llguidance knows (`date`, `date-time`, `email`, ...) is enforced
        the same way."""
        n = min(max_len if max_len is not None else self.bounds.max_string,
                self.bounds.max_string)
        spec: dict[str, Any] = {"type": "string", "maxLength": max(n, min_len)}
        if regex is not None:
            spec["pattern"] = regex
        if fmt is not None:
            spec["format"] = fmt
        if min_len:
            spec["minLength"] = min_len
        return self.add("pat", "%json " + json.dumps(spec))

    def number(self, integer: bool, nonnegative: bool) -> str:
        sign = "" if nonnegative else "-?"
        digits = f"(?:0|[1-9][0-9]{{0,{self.bounds.max_digits - 1}}})"
        frac = "" if integer else f"(?:\\.[0-9]{{1,{self.bounds.max_fraction}}})?"
        return f"/{sign}{digits}{frac}/"

    # --- values -----------------------------------------------------------------------

    def value(self, schema: Schema, depth: int = 0, hook: Hook | None = None,
              hook_tag: str = "", *, root: Schema) -> str | None:
        """A Lark expression matching JSON values of `schema`, or None if none fits.

        `root`: the schema a `$ref` in `schema` resolves against (the tool's parameters,
        which hold its `$defs`). `hook`: asked at every value below the top for a rule that
        may also stand there; `hook_tag` keeps rules made with different hooks apart.
        """
        text = json.dumps(schema, sort_keys=True, default=str)
        # A $ref means different things under different roots: key it by the root too.
        scope = str(id(root)) if '"$ref"' in text else ""
        key = (text, depth, hook_tag + scope)
        if key in self._by_key:
            return self._by_key[key]
        self._by_key[key] = None  # recursion guard: a cycle at the same depth fits nothing
        alts = self._alternatives(schema, depth, hook, hook_tag, root)
        if hook is not None:
            extra = hook(schema)
            if extra:
                alts.append(extra)
        alts = list(dict.fromkeys(a for a in alts if a))
        name = self.add("v", " | ".join(alts)) if alts else None
        self._by_key[key] = name
        return name

    def _alternatives(self, schema: Schema, depth: int, hook: Hook | None,
                      tag: str, root: Schema) -> list[str]:
        if not isinstance(schema, dict):
            return [] if schema is False else self._any(depth)
        if "$ref" in schema:
            if depth >= self.bounds.max_depth + 2:
                return []
            target = _resolve(schema["$ref"], root)
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            return self._opt(self.value(merged, depth + 1, hook, tag, root=root))
        if "const" in schema:
            return [lit(jtext(schema["const"]))]
        if "enum" in schema:
            return [lit(jtext(v)) for v in schema["enum"]]
        for combo in ("anyOf", "oneOf"):
            if combo in schema:
                base = {k: v for k, v in schema.items() if k != combo}
                out: list[str] = []
                for sub in schema[combo]:
                    out += self._opt(self.value({**base, **sub}, depth, hook, tag, root=root))
                return out
        if "allOf" in schema:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for sub in schema["allOf"]:
                sub = _resolve(sub["$ref"], root) if "$ref" in sub else sub
                merged = _merge(merged, sub)
            return self._opt(self.value(merged, depth, hook, tag, root=root))
        types = schema.get("type")
        if isinstance(types, list):
            out = []
            for t in types:
                out += self._opt(self.value({**schema, "type": t}, depth, hook, tag,
                                            root=root))
            return out
        return self._typed(schema, types, depth, hook, tag, root)

    def _typed(self, schema: Schema, t: str | None, depth: int, hook: Hook | None,
               tag: str, root: Schema) -> list[str]:
        if t == "string":
            if ("pattern" in schema or "format" in schema) and _string_compiles(
                    schema.get("pattern"), schema.get("format")):
                return [self.pattern(schema.get("pattern"), schema.get("maxLength"),
                                     int(schema.get("minLength", 0)), schema.get("format"))]
            return [self.string(schema.get("maxLength"), int(schema.get("minLength", 0)))]
        if t in ("number", "integer"):
            minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
            nonneg = isinstance(minimum, (int, float)) and minimum >= 0
            return [self.number(t == "integer", nonneg)]
        if t == "boolean":
            return ['"true"', '"false"']
        if t == "null":
            return ['"null"']
        if t == "array":
            return self._opt(self._array(schema, depth, hook, tag, root))
        if t == "object":
            return self._opt(self._object(schema, depth, hook, tag, root))
        if t is None:
            if "properties" in schema:
                return self._opt(self._object(schema, depth, hook, tag, root))
            if "items" in schema:
                return self._opt(self._array(schema, depth, hook, tag, root))
            return self._any(depth)
        raise ConstraintError(f"unsupported JSON schema type {t!r}")

    def _array(self, schema: Schema, depth: int, hook: Hook | None, tag: str,
               root: Schema) -> str | None:
        if depth >= self.bounds.max_depth:
            return '"[]"' if schema.get("minItems", 0) == 0 else None
        item = self.value(schema.get("items", {}), depth + 1, hook, tag, root=root)
        lo = int(schema.get("minItems", 0))
        hi = min(int(schema.get("maxItems", self.bounds.max_items)), self.bounds.max_items)
        if item is None or hi < lo:
            return '"[]"' if lo == 0 else None
        return self.add("arr", _repeat(self.open_arr, item, self.comma, self.close_arr, lo, hi))

    def _object(self, schema: Schema, depth: int, hook: Hook | None, tag: str,
                root: Schema) -> str | None:
        props: dict[str, Schema] = schema.get("properties") or {}
        if not props:
            return self._free_object(schema, depth, hook, tag, root)
        # Objects with declared properties are finite by construction (only $ref can
        # recurse, and $ref depth is bounded), so no depth cut here: deep types compile.
        required = [k for k in props if k in set(schema.get("required", []))]
        optional = [k for k in props if k not in set(required)]
        pairs: dict[str, str] = {}
        for k in required + optional:
            v = self.value(props[k], depth + 1, hook, tag, root=root)
            if v is None and k in required:
                return None
            if v is not None:
                pairs[k] = f"{self.key(k)} {v}"
        return self.add("obj", _object_body(required, [k for k in optional if k in pairs],
                                            pairs, self))

    def _free_object(self, schema: Schema, depth: int, hook: Hook | None,
                     tag: str, root: Schema) -> str | None:
        if depth >= self.bounds.max_depth:
            return '"{}"'
        extra = schema.get("additionalProperties", {})
        v = self.value(extra if isinstance(extra, dict) else {}, depth + 1, hook, tag,
                       root=root)
        if v is None or extra is False:
            return '"{}"'
        pair = self.add("kv", f'{self.string(40, 1)} {self.colon} {v}')
        return self.add("fobj", _repeat(self.open_obj, pair, self.comma, self.close_obj, 0,
                                        self.bounds.max_props))

    def _any(self, depth: int) -> list[str]:
        """Any JSON value, nested at most to the depth bound."""
        scalars = [self.string(), self.number(False, False), '"true"', '"false"', '"null"']
        if depth >= self.bounds.max_depth:
            return scalars
        inner = self.value({}, depth + 1, root={})
        assert inner is not None
        arr = self.add("arr", _repeat(self.open_arr, inner, self.comma, self.close_arr, 0,
                                      self.bounds.max_items))
        pair = self.add("kv", f'{self.string(40, 1)} {self.colon} {inner}')
        obj = self.add("fobj", _repeat(self.open_obj, pair, self.comma, self.close_obj, 0,
                                       self.bounds.max_props))
        return scalars + [arr, obj]

    @staticmethod
    def _opt(name: str | None) -> list[str]:
        return [name] if name else []


def _resolve(ref: str, root: Schema) -> Schema:
    if not ref.startswith("#/"):
        raise ConstraintError(f"unsupported $ref {ref!r} (only local refs)")
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise ConstraintError(f"unresolvable $ref {ref!r}")
        node = node[part]
    return node


def _merge(a: Schema, b: Schema) -> Schema:
    out = {**a, **{k: v for k, v in b.items() if k not in ("properties", "required")}}
    if "properties" in a or "properties" in b:
        out["properties"] = {**a.get("properties", {}), **b.get("properties", {})}
        out["required"] = list(dict.fromkeys(a.get("required", []) + b.get("required", [])))
    return out


def _repeat(open_: str, item: str, sep: str, close: str, lo: int, hi: int) -> str:
    """`open item (sep item){lo-1,hi-1} close`, unrolled (no unbounded `*`)."""
    if hi <= 0:
        return f"{open_} {close}"
    tail = f"({sep} {item})"
    seq = f"{item}" + (f" {tail}{{{max(lo - 1, 0)},{hi - 1}}}" if hi > 1 else "")
    return f"{open_} {seq} {close}" if lo >= 1 else f"{open_} ({seq})? {close}"


def _object_body(required: list[str], optional: list[str], pairs: dict[str, str],
                 rules: LarkRules) -> str:
    """Properties in schema order, required first; each optional one may be left out."""
    comma = rules.comma
    if required:
        first = pairs[required[0]]
        rest = [f'{comma} {pairs[k]}' for k in required[1:]]
        rest += [f'({comma} {pairs[k]})?' for k in optional]
        return " ".join([rules.open_obj, first, *rest, rules.close_obj])
    if not optional:
        return '"{}"'
    alts = []
    for i, k in enumerate(optional):
        later = [f'({comma} {pairs[j]})?' for j in optional[i + 1:]]
        alts.append(" ".join([pairs[k], *later]))
    return f'{rules.open_obj} (' + " | ".join(alts) + f')? {rules.close_obj}'
