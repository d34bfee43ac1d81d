"""The Chroma index of tool descriptions: embed each function once, find them by meaning.

Why content hashes: Semantic Kernel re-saved every function on every plan. Here each stored
function carries `ToolSpec.content_hash`; `sync` embeds only new and changed functions and
deletes removed ones, so a second run over an unchanged registry embeds nothing.

Where: a Chroma `PersistentClient` folder (default `localagent.paths.index_dir()`), or a
Chroma server when `LOCALAGENT_CHROMA_URL` (config `chroma_url`) is set; store.py says how
each is shared safely between processes. One collection per embedding model, named after
it; its metadata records the model's name, dimension and fingerprint, and a collection
built by another model (or another version of ours) is an `IndexError_` that says to
rebuild (`localagent tools index --rebuild`), never a silent wrong answer: on a server other
clients still use it, and a local folder is the user's to rebuild. A local folder that
cannot be opened at all is set aside and rebuilt, with a warning (store.py).

Ids are the functions' qualified names, so a collection holds at most one entry per
function whoever writes it, and `upsert` makes concurrent syncs of the same tools converge.
(An id made of the content hash would let two versions of one function coexist.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.errors import DuplicateFunctionError, IndexError_
from localagent.paths import index_dir
from localagent.retrieval.embeddings import (
    ChromaEmbeddingFunction,
    Embedder,
    MiniLMEmbedder,
    embedder_fingerprint,
    register_with_chroma,
)
from localagent.retrieval.server import TOKEN_ENV, URL_ENV, ChromaServer
from localagent.retrieval.store import (
    REBUILD_HINT,
    SCHEMA_VERSION,
    LocalStore,
    RemoteStore,
    Store,
)
from localagent.tools.spec import ToolSpec

BATCH = 256
METADATA_KEYS = ("embedding_model", "embedding_dim", "embedding_fingerprint", "localagent_schema")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SyncReport:
    added: int
    updated: int
    removed: int
    unchanged: int
    embedded: int  # texts sent to the embedder by this sync


@dataclass(frozen=True)
class SearchHit:
    qualified_name: str
    score: float  # cosine similarity, 1 - cosine distance (about 0..1 for this model)
    plugin: str
    name: str


def collection_name(embedder: Embedder) -> str:
    """Chroma names allow [a-zA-Z0-9._-], 3..512 characters, alphanumeric at both ends."""
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", embedder.name).strip("-._") or "model"
    return f"tools-{slug}"[:500]


class ToolIndex:
    """Tool descriptions embedded in Chroma. Open it, `sync` specs, `search` by meaning.

    `sync(specs)` makes the collection mirror `specs` (it deletes functions not in them);
    `sync(specs, prune=False)` only adds and updates, for callers that see a part of the
    tools (a run with fewer plugins) and must not delete the rest.

    Where: `url` (a Chroma server), else `path` (a local folder), else the configured
    server (`LOCALAGENT_CHROMA_URL`, config `chroma_url`), else `index_dir()`. An explicit
    `path` is always local, so benchmarks and tests keep their own folders. Opening checks
    the collection's embedding model; IndexError_ (exit 2) for every failure.
    """

    def __init__(
        self,
        path: Path | None = None,
        embedder: Embedder | None = None,
        *,
        rebuild: bool = False,
        url: str | None = None,
    ) -> None:
        self.embedder: Embedder = embedder if embedder is not None else MiniLMEmbedder()
        server = (
            ChromaServer.parse(url, os.environ.get(TOKEN_ENV))
            if url
            else configured_server() if path is None else None
        )
        self._store: Store = (
            RemoteStore(server)
            if server is not None
            else LocalStore(Path(path).expanduser() if path is not None else index_dir())
        )
        self.path: Path | None = self._store.path  # None for a server
        self.location: str = self._store.location  # the folder or the server's URL
        self._client: Any = None
        self._collection: Any = None
        register_with_chroma()
        if rebuild:
            self._store.wipe(collection_name(self.embedder))
        with self._use("open"):
            pass
        self._store.write_manifest(collection_name(self.embedder), self._expected_metadata())

    @property
    def remote(self) -> bool:
        return self._store.remote

    @property
    def warnings(self) -> list[str]:
        """Warnings printed while opening (a corrupt folder set aside)."""
        return list(self._store.warnings)

    # --- opening ---------------------------------------------------------------------

    @contextmanager
    def _use(self, action: str, *, write: bool = False) -> Iterator[Any]:
        """The collection, within one store session (under the lock, for a local folder)."""
        with self._store.session(self._probe, write=write) as (client, fresh):
            if fresh or client is not self._client:
                self._collection = self._open_collection(client)
                self._client = client
            with self._store.errors(action):
                yield self._collection

    def _probe(self, client: Any) -> None:
        """What a freshly opened client must manage: open our collection and count it."""
        self._open_collection(client).count()

    def _expected_metadata(self) -> dict[str, Any]:
        return {
            "hnsw:space": "cosine",
            "embedding_model": self.embedder.name,
            "embedding_dim": int(self.embedder.dim),
            "embedding_fingerprint": embedder_fingerprint(self.embedder),
            "localagent_schema": SCHEMA_VERSION,
        }

    def _open_collection(self, client: Any) -> Any:
        """Our collection, created if missing (atomically, also on a server), and refused
        when its metadata names another embedding model or schema."""
        name = collection_name(self.embedder)
        expected = self._expected_metadata()
        ef = ChromaEmbeddingFunction(self.embedder)
        with self._store.errors("open"):
            collection = client.get_or_create_collection(
                name, metadata=expected, embedding_function=ef  # type: ignore[arg-type]
            )
        stored = dict(collection.metadata or {})
        wrong = [k for k in METADATA_KEYS if stored.get(k) != expected[k]]
        if wrong:
            shared = " (shared: other clients may still use it)" if self.remote else ""
            raise IndexError_(
                f"the tool index at {self.location} was built with another embedding model or "
                f"version ({', '.join(f'{k}={stored.get(k)!r}' for k in wrong)}; "
                f"this run uses {self.embedder.name}, "
                f"fingerprint {expected['embedding_fingerprint']}){shared}",
                hint=REBUILD_HINT,
            )
        return collection
    # --- reading and writing -----------------------------------------------------------

    def count(self) -> int:
        with self._use("read") as collection:
            return int(collection.count())

    def stored_hashes(self) -> dict[str, str]:
        """Qualified name -> content hash of every stored function."""
        with self._use("read") as collection:
            return _hashes(collection)

    def sync(
        self, specs: Sequence[ToolSpec], progress: Progress | None = None, *, prune: bool = True
    ) -> SyncReport:
        """Embed new and changed functions; with `prune`, delete the ones not in `specs`.

        The texts are embedded outside the lock (loading the model takes seconds) and
        written in one session that looks at the stored hashes again: a function another
        process stored meanwhile with the same hash is not written twice, and the report
        counts what this call found and embedded.
        """
        wanted: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.qualified_name in wanted:
                raise DuplicateFunctionError(f"duplicate function {spec.qualified_name}")
            wanted[spec.qualified_name] = spec
        stored = self.stored_hashes()
        new = [q for q in wanted if q not in stored]
        changed = [q for q in wanted if q in stored and stored[q] != wanted[q].content_hash]
        todo = [wanted[q] for q in new + changed]
        vectors = self._embed(todo, progress)
        removed: list[str] = []
        if todo or (prune and any(q not in wanted for q in stored)):
            with self._use("write", write=True) as collection:
                now = _hashes(collection)
                fresh = [
                    (s, v)
                    for s, v in zip(todo, vectors)
                    if now.get(s.qualified_name) != s.content_hash
                ]
                for start in range(0, len(fresh), BATCH):
                    _upsert(collection, fresh[start : start + BATCH])
                removed = [q for q in now if q not in wanted] if prune else []
                for start in range(0, len(removed), BATCH * 4):
                    collection.delete(ids=removed[start : start + BATCH * 4])
        return SyncReport(
            added=len(new),
            updated=len(changed),
            removed=len(removed),
            unchanged=len(wanted) - len(new) - len(changed),
            embedded=len(todo),
        )

    def _embed(self, specs: Sequence[ToolSpec], progress: Progress | None) -> list[list[float]]:
        total = len(specs)
        if progress:
            progress(0, total)
        vectors: list[list[float]] = []
        for start in range(0, total, BATCH):
            batch = specs[start : start + BATCH]
            got = self.embedder.embed([s.embedding_text() for s in batch])
            if len(got) != len(batch) or any(len(v) != self.embedder.dim for v in got):
                raise IndexError_(
                    f"embedder {self.embedder.name} returned vectors of the wrong shape",
                    hint="check the embedding model installation",
                )
            vectors.extend(got)
            if progress:
                progress(min(start + BATCH, total), total)
        return vectors

    def search(
        self,
        query: str | Sequence[str],
        top_k: int = 10,
        *,
        among: Sequence[str] | None = None,
    ) -> list[SearchHit]:
        """The `top_k` stored functions closest in meaning to `query`, best first.

        Several query texts (a goal and its clauses) score each function by its best
        similarity to any of them; the union of each text's top k holds the overall top k.
        `among` restricts the search to those qualified names (e.g. one registry's tools).
        """
        texts = [query] if isinstance(query, str) else list(dict.fromkeys(query))
        if among is not None:
            among = list(dict.fromkeys(among))
            top_k = min(top_k, len(among))
        if top_k <= 0 or not texts or self.count() == 0:
            return []
        vectors = self.embedder.embed(texts)
        where: dict[str, Any] | None = None
        if among is not None:
            where = {"qualified_name": {"$in": among}} if len(among) > 1 else {
                "qualified_name": among[0]
            }
        with self._use("search") as collection:
            n = int(collection.count())
            if n == 0:
                return []
            res = collection.query(
                query_embeddings=vectors,  # type: ignore[arg-type]
                n_results=min(top_k, n),
                where=where,  # type: ignore[arg-type]
                include=["distances", "metadatas"],
            )
        best: dict[str, SearchHit] = {}
        for ids, dists, metas in zip(res["ids"], res["distances"], res["metadatas"]):
            for id_, dist, meta in zip(ids, dists, metas):
                score = 1.0 - float(dist)
                if id_ not in best or score > best[id_].score:
                    meta = meta or {}
                    best[id_] = SearchHit(
                        qualified_name=id_,
                        score=score,
                        plugin=str(meta.get("plugin", id_.split(".", 1)[0])),
                        name=str(meta.get("name", id_.split(".", 1)[-1])),
                    )
        return sorted(best.values(), key=lambda h: (-h.score, h.qualified_name))[:top_k]


def _hashes(collection: Any) -> dict[str, str]:
    got = collection.get(include=["metadatas"])
    return {
        id_: str((meta or {}).get("content_hash", ""))
        for id_, meta in zip(got["ids"], got["metadatas"] or [])
    }


def _upsert(collection: Any, items: Sequence[tuple[ToolSpec, list[float]]]) -> None:
    """One batch, keyed by qualified name: idempotent, so concurrent writers converge."""
    if not items:
        return
    collection.upsert(
        ids=[s.qualified_name for s, _ in items],
        embeddings=[v for _, v in items],  # type: ignore[arg-type]
        documents=[s.embedding_text() for s, _ in items],
        metadatas=[
            {
                "content_hash": s.content_hash,
                "plugin": s.plugin,
                "name": s.name,
                "qualified_name": s.qualified_name,
            }
            for s, _ in items
        ],
    )


def configured_server(env: Mapping[str, str] | None = None) -> ChromaServer | None:
    """The server from `LOCALAGENT_CHROMA_URL`, else the config file's `chroma_url`; None
    for the on-disk index. The token comes from `LOCALAGENT_CHROMA_TOKEN` only (a secret is
    kept out of the config file and out of `localagent config show`)."""
    env = os.environ if env is None else env
    url = env.get(URL_ENV) or None
    if url is None:
        from localagent.config import config_path, read_config_file

        value = read_config_file(config_path(env)).get("chroma_url")
        url = str(value) if value else None
    if not url or not url.strip():
        return None
    return ChromaServer.parse(url, env.get(TOKEN_ENV))
