"""Replayable model calls for benchmarks and tests: one SQLite file of (request, output).

Every generation a benchmark makes is stored under a key of (model file sha256, rendered
prompt, constraint, sampling settings, max tokens, stop strings, the give-up criterion's
name) with its output and what it cost. A re-run reads what it can and generates only what
changed: after a change to a planner's second turn, the first turns and the raw baseline
come from the store. Greedy decoding makes this exact; a sampled call keys on its seed
too. `LLM.next_tokens` (the first-token distribution a probe reads) is stored the same way.

Why SQLite: one file in the results folder, safe to append from one process while another
reads, and a row per call (no rewrite of a large JSON file).

Never wrapped around a user's `run`: a user's model calls are always generated.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from localagent.constraint import Constraint
from localagent.llm.base import LLM, Completion, GiveUp, NextTokens, Usage
from localagent.llm.delegating import DelegatingLLM

STORE_NAME = "replay.sqlite"
_SCHEMA = """CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, kind TEXT NOT NULL, output TEXT NOT NULL)"""


def model_identity(llm: LLM) -> str:
    """The model a stored output belongs to: the GGUF's sha256 where the backend knows its
    file (`cache_identity`), else the model's name (a scripted model, a remote one)."""
    identity = getattr(llm, "cache_identity", None)
    if callable(identity):
        try:
            return str(identity().model_sha256)
        except (OSError, AttributeError):
            pass
    return f"name:{llm.info.name}"


def request_key(model: str, kind: str, request: dict[str, Any]) -> str:
    """The sha256 of everything that decides an output: model, call kind and request."""
    text = json.dumps([model, kind, request], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ReplayStats:
    replayed: int = 0
    generated: int = 0

    @property
    def total(self) -> int:
        return self.replayed + self.generated


class ReplayStore:
    """The SQLite file of stored outputs; thread-safe (one connection, one lock)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        with self._lock:
            row = self._db.execute("SELECT output FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, model: str, kind: str, output: Any) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?)",
                             (key, model, kind, json.dumps(output, ensure_ascii=False)))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class ReplayLLM(DelegatingLLM):
    """Answers a call from `store` where the same request was made before, else asks
    `inner` and stores its output. `read=False` (`--no-replay`) never reads the store but
    still writes it, so the next run can replay. `stats` counts both kinds."""

    def __init__(self, inner: LLM, store: ReplayStore, *, read: bool = True) -> None:
        super().__init__(inner)
        self.store, self.read = store, read
        self.model = model_identity(inner)
        self.stats = ReplayStats()
        self._lock = threading.Lock()

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: Sequence[str] = (),
                 temperature: float | None = None, seed: int | None = None,
                 constraint: Constraint | None = None,
                 give_up: GiveUp | None = None) -> Completion:
        greedy = not temperature
        request = {"prompt": prompt, "max_tokens": max_tokens, "stop": list(stop),
                   "temperature": 0.0 if greedy else temperature,
                   "seed": None if greedy else seed,
                   "constraint": None if constraint is None else
                   [constraint.kind, constraint.source],
                   "give_up": None if give_up is None else _name(give_up)}
        key = request_key(self.model, "complete", request)
        stored = self.store.get(key) if self.read else None
        if stored is not None:
            self._count(replayed=True)
            return Completion(text=stored["text"], usage=Usage(**stored["usage"]),
                              finish_reason=stored["finish_reason"], prompt=prompt)
        completion = self.inner.complete(prompt, max_tokens=max_tokens, stop=stop,
                                         temperature=temperature, seed=seed,
                                         constraint=constraint, give_up=give_up)
        self.store.put(key, self.model, "complete",
                       {"text": completion.text, "finish_reason": completion.finish_reason,
                        "usage": asdict(completion.usage)})
        self._count(replayed=False)
        return completion

    def next_tokens(self, prompt: str, *, top_k: int = 64) -> NextTokens:
        key = request_key(self.model, "next_tokens", {"prompt": prompt, "top_k": top_k})
        stored = self.store.get(key) if self.read else None
        if stored is not None:
            self._count(replayed=True)
            return NextTokens(choices=tuple((t, p) for t, p in stored["choices"]),
                              usage=Usage(**stored["usage"]))
        out = self.inner.next_tokens(prompt, top_k=top_k)
        self.store.put(key, self.model, "next_tokens",
                       {"choices": [list(c) for c in out.choices], "usage": asdict(out.usage)})
        self._count(replayed=False)
        return out

    def _count(self, *, replayed: bool) -> None:
        with self._lock:
            if replayed:
                self.stats.replayed += 1
            else:
                self.stats.generated += 1


class Replaying:
    """A model loader whose every model is wrapped in a `ReplayLLM` over one store
    (`<out_dir>/replay.sqlite`, opened on the first load); `stats` sums the replay counts
    of every model it made."""

    def __init__(self, load: Callable[[str], LLM], out_dir: Path, *, read: bool = True
                 ) -> None:
        self.load, self.out_dir, self.read = load, Path(out_dir), read
        self.made: list[ReplayLLM] = []
        self._store: ReplayStore | None = None

    def __call__(self, name: str) -> ReplayLLM:
        if self._store is None:
            self._store = ReplayStore(self.out_dir / STORE_NAME)
        self.made.append(ReplayLLM(self.load(name), self._store, read=self.read))
        return self.made[-1]

    @property
    def stats(self) -> ReplayStats:
        return ReplayStats(replayed=sum(m.stats.replayed for m in self.made),
                           generated=sum(m.stats.generated for m in self.made))

    def summary(self) -> str:
        s = self.stats
        return f"model calls: {s.replayed} of {s.total} replayed, {s.generated} generated"


def _name(function: Any) -> str:
    """A give-up criterion's identity: its module and qualified name (a changed criterion
    under the same name is a code change the caller answers with `--no-replay`)."""
    return f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', '')}"
