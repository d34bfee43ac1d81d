"""NESTFUL (non-executable part): nested call sequences, judged on the calls made.

Data: `data_v1/non-executable/non-executable-<source>-{data,spec}.json` of the
`nestful-wrapper` package. A sample is a goal (`input`) and a gold sequence of calls, each
labelled `var1, var2, ...`, whose arguments may refer to earlier outputs (`$var1$`, or a
field: `$var1.distance$`); a final pseudo-call `var_result` names the outputs returned and
is not compared. Specs give each function's `query_parameters` and `output_parameters`.

Our planners run against stubs that return, for the k-th call made, a traceable
placeholder per output field (`TraceableOutputs`): a later argument equal to one is read
back as the reference NESTFUL writes. So a planner that passes a looked-up value on is
credited with the reference whether it wrote `$k` (sequential), nested a call (tree) or
copied the value from a result (ReAct, tool calling).

Metrics, per sample then averaged (as in the NESTFUL paper): F1 of function names
(multisets), F1 of arguments ((function, name, value) triples), partial sequence accuracy
(share of gold calls matched at their position, name and arguments), full sequence
accuracy (every call matched, same length). NESTFUL's win rate needs the executable part,
which calls web APIs and cannot run offline: it is not reported.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.errors import UsageError

SOURCES = ("glaive", "sgd")
_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean",
          "array": "array", "object": "object", "list": "array", "dict": "object"}


@dataclass(frozen=True)
class NestfulCase:
    id: str
    source: str
    goal: str
    gold: tuple[tuple[str, dict[str, Any]], ...]  # (function, arguments), var_result dropped
    functions: tuple[dict[str, Any], ...]  # NESTFUL specs of the functions the sample uses

    def openai_tools(self) -> list[dict[str, Any]]:
        return [openai_tool(f) for f in self.functions]


def openai_tool(spec: dict[str, Any]) -> dict[str, Any]:
    """A NESTFUL spec as an OpenAI tool schema (with a `returns` object schema)."""
    props, required = {}, []
    for name, p in (spec.get("query_parameters") or {}).items():
        props[name] = _param(p)
        if p.get("required"):
            required.append(name)
    outs = {name: _param(p) for name, p in (spec.get("output_parameters") or {}).items()}
    return {"type": "function", "function": {
        "name": spec["name"], "description": spec.get("description", ""),
        "parameters": {"type": "object", "properties": props, "required": required},
        "returns": {"type": "object", "properties": outs} if outs else {}}}


def _param(p: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _TYPES.get(str(p.get("type") or "string"), "string")}
    if p.get("description"):
        out["description"] = p["description"]
    if p.get("allowed_values"):
        out["enum"] = list(p["allowed_values"])
    return out


def load_cases(root: Path, sources: Sequence[str], per_source: int) -> list[NestfulCase]:
    """`per_source` evenly spaced samples of each source (0: all).

    Each sample is offered the functions its gold sequence calls (NESTFUL ships one spec
    per source, not a tool list per sample), in the spec file's order so that the order of
    the manual does not give the order of the calls away.
    """
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise UsageError(f"unknown NESTFUL sources {unknown}; choose from {list(SOURCES)}")
    base = root / "data_v1" / "non-executable"
    cases = []
    for source in sources:
        data = _json(base / f"non-executable-{source}-data.json")
        specs = {s["name"]: s for s in _json(base / f"non-executable-{source}-spec.json")}
        picked = data if per_source <= 0 else [data[(i * len(data)) // per_source]
                                               for i in range(min(per_source, len(data)))]
        for row in picked:
            n = data.index(row)
            gold = tuple((c["name"], dict(c.get("arguments") or {})) for c in row["output"]
                         if c["name"] != "var_result")
            used = {name for name, _ in gold}
            if any(name not in specs for name in used):
                continue
            cases.append(NestfulCase(id=f"{source}-{n}", source=source, goal=row["input"],
                                     gold=gold,
                                     functions=tuple(s for x, s in specs.items() if x in used)))
    return cases


class TraceableOutputs:
    """Stubs whose k-th call returns placeholders that name their origin.

    A string field holds `$var<k>.<field>$` itself; a number field a value unique to (k,
    field) (`77000 + 100 k + i`). `reference(value)` reads a value back as NESTFUL's
    reference, or None.
    """

    def __init__(self, cases_tools: Sequence[dict[str, Any]]) -> None:
        self._returns = {t["function"]["name"]: t["function"].get("returns") or {}
                         for t in cases_tools}
        self._refs: dict[str, str] = {}
        self._count = 0
        self._lock = threading.Lock()

    def for_function(self, name: str) -> Any:
        def call(**_: Any) -> Any:
            with self._lock:
                self._count += 1
                k = self._count
            props = (self._returns.get(name) or {}).get("properties") or {}
            if not props:
                value = f"$var{k}$"
                self._refs[value] = value
                return value
            out: dict[str, Any] = {}
            for i, (field, schema) in enumerate(props.items()):
                ref = f"$var{k}.{field}$"
                kind = schema.get("type")
                value: Any = (77000 + 100 * k + i if kind in ("number", "integer")
                              else [ref] if kind == "array" else ref)
                out[field] = value
                self._refs[json.dumps(value, sort_keys=True)] = ref
            self._refs[json.dumps(out, sort_keys=True)] = f"$var{k}$"
            return out

        return call

    def reference(self, value: Any) -> str | None:
        if isinstance(value, str) and value in self._refs.values():
            return value
        return self._refs.get(json.dumps(value, sort_keys=True, default=str))


def read_back(calls: Sequence[tuple[str, dict[str, Any]]],
              outputs: TraceableOutputs) -> list[tuple[str, dict[str, Any]]]:
    """The calls with every placeholder argument replaced by its NESTFUL reference."""
    out = []
    for name, args in calls:
        mapped = {}
        for key, value in args.items():
            ref = outputs.reference(value)
            mapped[key] = ref if ref is not None else value
        out.append((name, mapped))
    return out


@dataclass(frozen=True)
class Scores:
    f1_functions: float
    f1_arguments: float
    partial_sequence: float
    full_sequence: float


def score(gold: Sequence[tuple[str, dict[str, Any]]],
          predicted: Sequence[tuple[str, dict[str, Any]]]) -> Scores:
    """The four NESTFUL metrics of one sample."""
    names = _f1(Counter(n for n, _ in gold), Counter(n for n, _ in predicted))
    args = _f1(Counter(_triples(gold)), Counter(_triples(predicted)))
    matched = sum(1 for i, g in enumerate(gold)
                  if i < len(predicted) and _same(g, predicted[i]))
    partial = matched / len(gold) if gold else 1.0
    full = 1.0 if matched == len(gold) and len(predicted) == len(gold) else 0.0
    return Scores(names, args, partial, full)


def _triples(calls: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, str]]:
    return [(n, k, _norm(v)) for n, a in calls for k, v in a.items()]


def _same(a: tuple[str, dict[str, Any]], b: tuple[str, dict[str, Any]]) -> bool:
    return a[0] == b[0] and {k: _norm(v) for k, v in a[1].items()} == {
        k: _norm(v) for k, v in b[1].items()}


def _norm(value: Any) -> str:
    """Values compared as NESTFUL's samples write them: `"3"` and 3 alike, case-blind."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(float(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            return repr(float(text))
        except ValueError:
            return text.lower()
    return json.dumps(value, sort_keys=True, default=str).lower()


def _f1(gold: Counter, predicted: Counter) -> float:
    if not gold and not predicted:
        return 1.0
    hit = sum((gold & predicted).values())
    if hit == 0:
        return 0.0
    p, r = hit / sum(predicted.values()), hit / sum(gold.values())
    return 2 * p * r / (p + r)


def _json(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"NESTFUL data file not found: {path}")
    return json.loads(path.read_text(encoding="utf-8"))
