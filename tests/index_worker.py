"""One of several processes writing and searching one tool index at once (test_concurrency).

Usage: python tests/index_worker.py INDEX_DIR|CHROMA_URL WORKER ROUNDS

Real Chroma and the real lock; the embedder hashes each text into a unit vector, so a
stress run costs no model load. Prints one JSON line: the functions it synced.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from localagent.retrieval.dataset import load_tools
from localagent.retrieval.index import ToolIndex
from localagent.tools.spec import ToolSpec


class HashEmbedder:
    """Deterministic 32-dimensional unit vectors from sha256 (equal text, equal vector)."""

    name = "hash-test"
    dim = 32
    fingerprint = "hash-test:32"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            raw = [b - 127.5 for b in hashlib.sha256(text.encode()).digest()]
            norm = sum(x * x for x in raw) ** 0.5
            out.append([x / norm for x in raw])
        return out


SHARED = 40  # every worker syncs these; each also syncs its own slice and random extras
OWN = 25


def plan(worker: int, rounds: int) -> list[list[ToolSpec]]:
    """The spec lists worker `worker` syncs, one per round (deterministic)."""
    pool = load_tools()
    rng = random.Random(worker)
    shared = pool[:SHARED]
    own = pool[SHARED + worker * OWN : SHARED + (worker + 1) * OWN]
    rest = pool[SHARED + 8 * OWN :]
    return [shared + own[: (r + 1) * OWN // rounds] + rng.sample(rest, 5) for r in range(rounds)]


def main() -> None:
    where, worker, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    remote = where.startswith("http")
    synced: dict[str, str] = {}
    for specs in plan(worker, rounds):
        # a fresh open each round, as a CLI call
        index = (ToolIndex(url=where, embedder=HashEmbedder()) if remote
                 else ToolIndex(Path(where), HashEmbedder()))
        index.sync(specs, prune=False)
        synced.update({s.qualified_name: s.content_hash for s in specs})
        stored = index.stored_hashes()
        lost = [q for q in synced if stored.get(q) != synced[q]]
        if lost:
            raise SystemExit(f"worker {worker}: lost {lost[:5]}")
        hits = index.search(specs[-1].description, top_k=3, among=[s.qualified_name for s in specs])
        if not hits:
            raise SystemExit(f"worker {worker}: search found nothing")
    print(json.dumps(synced))


if __name__ == "__main__":
    main()
