"""The library of solved plans the planners show as few-shot examples, and how one is chosen.

Plans live in `library/solved_plans.yaml` in the tree form, over functions invented for
the examples. The sequential planner sees the same plan flattened into steps (inner calls
first, `"$k"` for the output of step k, the previous output piped as `input`), so one
library serves both planners and the two never teach different things.

Choice: `fixed_examples()` (the plans marked `fixed`, the same for every goal, so the
prompt prefix and the KV cache are shared across goals) or `ExampleSelector.similar(goal)`
(the k plans whose goals are nearest to the goal: embeddings of the bundled MiniLM in an
in-memory Chroma collection; the library is small, embedding it costs well under a second).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from localagent.plan import INPUT
from localagent.tools.spec import ToolSpec

LIBRARY = Path(__file__).parent / "library" / "solved_plans.yaml"


@dataclass(frozen=True)
class SolvedPlan:
    """A goal, its plan (tree form) and the functions the plan uses."""

    goal: str
    plan: dict[str, Any] = field(hash=False)
    tools: tuple[ToolSpec, ...] = field(hash=False)
    fixed: bool = False

    @property
    def steps(self) -> list[dict[str, Any]]:
        return flatten(self.plan)

    @property
    def reasoning(self) -> str:
        return steps_text(self.steps)

    def sequential(self) -> dict[str, Any]:
        """The plan as the sequential planner writes it: `{"input", "subtasks"}`."""
        steps = [dict(s, args=dict(s["args"])) for s in self.steps]
        first = steps[0]["args"]
        start = first.pop(INPUT) if isinstance(first.get(INPUT), str) else ""
        for k, step in enumerate(steps[1:], start=2):
            if step["args"].get(INPUT) == f"${k - 1}":
                del step["args"][INPUT]  # the previous output is piped in anyway
        return {"input": start, "subtasks": steps}


def flatten(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """A call tree as steps in evaluation order; a nested call becomes `"$k"`."""
    steps: list[dict[str, Any]] = []

    def visit(node: Any) -> Any:
        if isinstance(node, dict) and set(node) == {"function", "args"}:
            args = {k: visit(v) for k, v in node["args"].items()}
            steps.append({"function": node["function"], "args": args})
            return f"${len(steps)}"
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node

    visit(plan)
    return steps


def steps_text(steps: Sequence[dict[str, Any]]) -> str:
    """`1. Flights.GetFare(Oslo); 2. Math.Add(step 1, 12)`: the reasoning an example shows."""

    def show(value: Any) -> str:
        if isinstance(value, str) and value.startswith("$") and value[1:].isdigit():
            return f"step {value[1:]}"
        if isinstance(value, list):
            return "[" + ", ".join(show(v) for v in value) + "]"
        return str(value)

    return "; ".join(
        f"{i}. {s['function']}({', '.join(show(v) for v in s['args'].values())})"
        for i, s in enumerate(steps, start=1))


def _spec(name: str, raw: dict[str, Any]) -> ToolSpec:
    plugin, function = name.split(".")
    props, optional = {}, set(raw.get("optional", []))
    for arg, (kind, description) in raw.get("args", {}).items():
        schema: dict[str, Any] = {"type": kind, "description": description}
        if kind == "array":
            schema["items"] = {}
        props[arg] = schema
    returns = raw["returns"]
    if returns.startswith("array of "):
        ret: dict[str, Any] = {"type": "array", "items": {"type": returns[len("array of "):]}}
    else:
        ret = {"type": returns}
    return ToolSpec(plugin=plugin, name=function, description=raw["description"],
                    parameters={"type": "object", "properties": props,
                                "required": [a for a in props if a not in optional],
                                "additionalProperties": False},
                    returns=ret)


@lru_cache(maxsize=4)
def load_library(path: Path = LIBRARY) -> tuple[SolvedPlan, ...]:
    """Every solved plan of the library, with the specs of the functions it calls."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    specs = {name: _spec(name, raw) for name, raw in data["tools"].items()}
    plans = []
    for raw in data["plans"]:
        used = dict.fromkeys(s["function"] for s in flatten(raw["plan"]))
        plans.append(SolvedPlan(goal=raw["goal"], plan=raw["plan"],
                                tools=tuple(specs[n] for n in used),
                                fixed=bool(raw.get("fixed"))))
    return tuple(plans)


def fixed_examples() -> list[SolvedPlan]:
    return [p for p in load_library() if p.fixed]


class ExampleSelector:
    """Picks the solved plans nearest to a goal (cosine similarity of MiniLM embeddings).

    One per process (`default_selector()`): the library is embedded once, into an
    in-memory Chroma collection, on first use.
    """

    def __init__(self, library: Sequence[SolvedPlan] | None = None,
                 embedder: Any | None = None) -> None:
        self.library = list(library if library is not None else load_library())
        self._embedder = embedder
        self._collection: Any = None
        self._lock = threading.Lock()

    def _open(self) -> Any:
        with self._lock:
            if self._collection is None:
                import chromadb
                from chromadb.config import Settings

                from localagent.retrieval.embeddings import (
                    ChromaEmbeddingFunction,
                    MiniLMEmbedder,
                    register_with_chroma,
                )

                register_with_chroma()

                embedder = self._embedder or MiniLMEmbedder()
                client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
                collection = client.get_or_create_collection(
                    "solved-plans", metadata={"hnsw:space": "cosine"},
                    embedding_function=ChromaEmbeddingFunction(embedder))  # type: ignore[arg-type]
                collection.upsert(ids=[str(i) for i in range(len(self.library))],
                                  documents=[p.goal for p in self.library])
                self._collection = collection
        return self._collection

    def similar(self, goal: str, k: int = 3) -> list[SolvedPlan]:
        """The `k` nearest plans, the nearest last (closest to the goal in the prompt)."""
        found = self._open().query(query_texts=[goal], n_results=min(k, len(self.library)))
        nearest = [self.library[int(i)] for i in found["ids"][0]]
        return list(reversed(nearest))


_DEFAULT: ExampleSelector | None = None


def default_selector() -> ExampleSelector:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = ExampleSelector()
    return _DEFAULT


def choose_examples(goal: str, techniques: Any, k: int = 3) -> list[SolvedPlan]:
    """The examples a plan planner shows: the `k` most similar with the `similar`
    technique, else the fixed ones."""
    if getattr(techniques, "similar", False):
        return default_selector().similar(goal, k)
    return fixed_examples()
