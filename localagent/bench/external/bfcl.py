"""BFCL v4 (Berkeley Function Calling Leaderboard): cases, schemas and BFCL's own judge.

Cases come from the `bfcl-eval` data package (`packages.BFCL`): `data/BFCL_v4_<cat>.json`
(one JSON object a line: `id`, `question` (turns of chat messages), `function` (BFCL
schemas)) and `data/possible_answer/` for the categories that have answers. A sample is
evenly spaced over a category, so the same `per_category` always picks the same cases.

The judge is BFCL's `ast_checker`, imported from the package. Its module imports the
provider zoo (`bfcl_eval.constants.model_config`) only to read one flag,
`underscore_to_dot`; a stub module stands in for it (the flag is False: our calls keep
BFCL's dotted names). `irrelevance` cases have no answer file: right when no function is
called.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.errors import UsageError

DEVELOPMENT = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
HELD_OUT = ("live_simple", "live_multiple", "live_irrelevance")  # never tune on these
CATEGORIES = DEVELOPMENT + HELD_OUT
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


@dataclass(frozen=True)
class BfclCase:
    id: str
    category: str
    messages: tuple[dict[str, str], ...]  # the first turn, as BFCL gives it
    functions: tuple[dict[str, Any], ...]  # BFCL's own function descriptions
    answer: tuple[dict[str, Any], ...] | None  # possible answers; None: nothing to call

    @property
    def goal(self) -> str:
        """What a user of localagent types: the last user message of the turn."""
        users = [m["content"] for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    def openai_tools(self) -> list[dict[str, Any]]:
        """The functions as OpenAI tool schemas with JSON-schema types."""
        return [{"type": "function", "function": {
            "name": f["name"], "description": f.get("description", ""),
            "parameters": json_schema(f.get("parameters") or {"type": "dict"})}}
            for f in self.functions]


def json_schema(bfcl: dict[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema in JSON Schema terms: `dict` -> object, `float` -> number,
    `tuple` -> array, `any` -> no type; nested properties and items alike."""
    out: dict[str, Any] = {}
    for key, value in bfcl.items():
        if key == "type":
            mapped = _TYPES.get(value, value)
            if mapped is not None:
                out["type"] = mapped
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: json_schema(v) for k, v in value.items() if isinstance(v, dict)}
        elif key == "items" and isinstance(value, dict):
            out[key] = json_schema(value)
        elif key in ("description", "enum", "required", "default"):
            out[key] = value
    if "required" in out and "properties" in out:
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    return out


def load_cases(root: Path, categories: Sequence[str], per_category: int) -> list[BfclCase]:
    """`per_category` evenly spaced cases of each category (0: all)."""
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise UsageError(f"unknown BFCL categories {unknown}; choose from {list(CATEGORIES)}")
    data = root / "bfcl_eval" / "data"
    cases: list[BfclCase] = []
    for category in categories:
        rows = _jsonl(data / f"BFCL_v4_{category}.json")
        answers = ({} if "irrelevance" in category else
                   {r["id"]: r["ground_truth"]
                    for r in _jsonl(data / "possible_answer" / f"BFCL_v4_{category}.json")})
        for row in _evenly(rows, per_category):
            answer = answers.get(row["id"])
            cases.append(BfclCase(
                id=row["id"], category=category, messages=tuple(row["question"][0]),
                functions=tuple(row["function"]),
                answer=None if answer is None else tuple(answer)))
    return cases


def judge(root: Path, case: BfclCase, calls: Sequence[dict[str, Any]]) -> str | None:
    """None when BFCL's checker accepts `calls` (`[{name: {arg: value}}]`), else why not."""
    if case.answer is None:
        return None if not calls else f"called {', '.join(next(iter(c)) for c in calls)}"
    if not calls:
        return "no function called"
    checker, language = _checker(root)
    verdict = checker(list(case.functions), list(calls), list(case.answer), language,
                      case.category, "localagent")
    if verdict.get("valid"):
        return None
    errors = verdict.get("error") or [verdict.get("error_type", "invalid")]
    return str(errors[0])[:200]


def _checker(root: Path) -> tuple[Any, Any]:
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    stub_name = "bfcl_eval.constants.model_config"
    if stub_name not in sys.modules:
        stub = types.ModuleType(stub_name)

        class _Config:
            underscore_to_dot = False

        class _Mapping(dict):
            def __missing__(self, key: str) -> _Config:
                return _Config()

        stub.MODEL_CONFIG_MAPPING = _Mapping()  # type: ignore[attr-defined]
        sys.modules[stub_name] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language.PYTHON


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise UsageError(f"BFCL data file not found: {path}")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _evenly(rows: list[Any], k: int) -> list[Any]:
    if k <= 0 or k >= len(rows):
        return rows
    return [rows[(i * len(rows)) // k] for i in range(k)]
