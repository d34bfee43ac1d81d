"""The Chroma index of tool descriptions: embed each function once, find them by meaning.

Why content hashes: Semantic Kernel re-saved every function on every plan. Here each stored
function carries `ToolSpec.content_hash`; `sync` embeds only new and changed functions and
deletes removed ones, so a second run over an unchanged registry embeds nothing.

Layout: one Chroma `PersistentClient` directory (default `localagent.paths.index_dir()`),
one collection per embedding model, named after it. The collection metadata records the
model's name, dimension and fingerprint; a directory built by another model (or another
version of ours), a corrupt or unwritable one, is an `IndexError_` that says to rebuild
(`localagent tools index --rebuild`), never a silent wrong answer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.errors import DuplicateFunctionError, IndexError_, LocalAgentError
from localagent.paths import index_dir
from localagent.retrieval.embeddings import (
    ChromaEmbeddingFunction,
    Embedder,
    MiniLMEmbedder,
    embedder_fingerprint,
    register_with_chroma,
)
from localagent.tools.spec import ToolSpec

SCHEMA_VERSION = 1
MANIFEST_NAME = "localagent-index.json"
REBUILD_HINT = "rebuild it with: localagent tools index --rebuild"
BATCH = 256

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
    """

    def __init__(
        self,
        path: Path | None = None,
        embedder: Embedder | None = None,
        *,
        rebuild: bool = False,
    ) -> None:
        self.path = Path(path).expanduser() if path is not None else index_dir()
        self.embedder: Embedder = embedder if embedder is not None else MiniLMEmbedder()
        if rebuild:
            self._wipe()
        self._prepare_dir()
        self._client = self._open_client()
        self._collection = self._open_collection()
        self._write_manifest()

    # --- opening ---------------------------------------------------------------------

    def _looks_like_index(self) -> bool:
        return (self.path / MANIFEST_NAME).is_file() or (self.path / "chroma.sqlite3").exists()

    def _wipe(self) -> None:
        """Delete the directory, but only one that is (or looks like) an index of ours."""
        if not self.path.exists():
            return
        if self.path.is_dir() and (self._looks_like_index() or not any(self.path.iterdir())):
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()  # forget clients opened on the old files
            try:
                shutil.rmtree(self.path)
            except OSError as exc:
                raise IndexError_(
                    f"cannot delete the tool index at {self.path}: {exc}",
                    hint="check its permissions, or set LOCALAGENT_INDEX_DIR to another folder",
                ) from exc
            return
        raise IndexError_(
            f"refusing to rebuild {self.path}: it is not a localagent tool index",
            hint="set LOCALAGENT_INDEX_DIR to an empty or index folder",
        )

    def _prepare_dir(self) -> None:
        hint = "choose a writable folder with LOCALAGENT_INDEX_DIR"
        if self.path.exists() and not self.path.is_dir():
            raise IndexError_(f"the tool index path {self.path} is not a folder", hint=hint)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexError_(
                f"cannot create the tool index folder {self.path}: {exc.strerror or exc}",
                hint=hint,
            ) from exc
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise IndexError_(f"the tool index folder {self.path} is not writable", hint=hint)
        if any(self.path.iterdir()) and not self._looks_like_index():
            raise IndexError_(
                f"{self.path} is not empty and is not a localagent tool index",
                hint="set LOCALAGENT_INDEX_DIR to an empty or index folder",
            )

    @contextmanager
    def _chroma(self, action: str) -> Iterator[None]:
        """Any Chroma/sqlite failure becomes one clear IndexError_."""
        try:
            yield
        except (LocalAgentError, KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # also pyo3's PanicException from Chroma's Rust core
            text = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            unwritable = "readonly" in text or "read-only" in text or "ermission" in text
            raise IndexError_(
                f"cannot {action} the tool index at {self.path} "
                f"({'not writable' if unwritable else 'corrupt or unreadable'}): {text}",
                hint="choose a writable folder with LOCALAGENT_INDEX_DIR"
                if unwritable
                else REBUILD_HINT,
            ) from exc

    def _open_client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        register_with_chroma()
        with self._chroma("open"):
            client = chromadb.PersistentClient(
                path=str(self.path), settings=Settings(anonymized_telemetry=False)
            )
            client.list_collections()  # reads the database now, not at the first search
            return client

    def _expected_metadata(self) -> dict[str, Any]:
        return {
            "hnsw:space": "cosine",
            "embedding_model": self.embedder.name,
            "embedding_dim": int(self.embedder.dim),
            "embedding_fingerprint": embedder_fingerprint(self.embedder),
            "localagent_schema": SCHEMA_VERSION,
        }

    def _open_collection(self) -> Any:
        name = collection_name(self.embedder)
        expected = self._expected_metadata()
        ef = ChromaEmbeddingFunction(self.embedder)
        with self._chroma("open"):
            names = {c if isinstance(c, str) else c.name for c in self._client.list_collections()}
            if name not in names:
                return self._client.create_collection(
                    name, metadata=expected, embedding_function=ef  # type: ignore[arg-type]
                )
            collection = self._client.get_collection(name, embedding_function=ef)  # type: ignore[arg-type]
        stored = dict(collection.metadata or {})
        keys = ("embedding_model", "embedding_dim", "embedding_fingerprint", "localagent_schema")
        wrong = [k for k in keys if stored.get(k) != expected[k]]
        if wrong:
            raise IndexError_(
                f"the tool index at {self.path} was built with another embedding model or "
                f"version ({', '.join(f'{k}={stored.get(k)!r}' for k in wrong)}; "
                f"this run uses {self.embedder.name}, "
                f"fingerprint {expected['embedding_fingerprint']})",
                hint=REBUILD_HINT,
            )
        return collection

    def _write_manifest(self) -> None:
        """Marks the folder as ours (so --rebuild may delete it) and says what is inside."""
        manifest_path = self.path / MANIFEST_NAME
        try:
            data = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        except (OSError, ValueError):
            data = {}
        collections = data.get("collections", {}) if isinstance(data, dict) else {}
        meta = self._expected_metadata()
        collections[collection_name(self.embedder)] = {
            "embedding_model": meta["embedding_model"],
            "embedding_dim": meta["embedding_dim"],
            "embedding_fingerprint": meta["embedding_fingerprint"],
        }
        text = json.dumps({"schema": SCHEMA_VERSION, "collections": collections}, indent=2)
        tmp = manifest_path.with_suffix(".tmp")
        with self._chroma("write"):
            tmp.write_text(text)
            os.replace(tmp, manifest_path)

    # --- reading and writing -----------------------------------------------------------

    def count(self) -> int:
        with self._chroma("read"):
            return int(self._collection.count())

    def stored_hashes(self) -> dict[str, str]:
        """Qualified name -> content hash of every stored function."""
        with self._chroma("read"):
            got = self._collection.get(include=["metadatas"])
        return {
            id_: str((meta or {}).get("content_hash", ""))
            for id_, meta in zip(got["ids"], got["metadatas"] or [])
        }

    def sync(
        self, specs: Sequence[ToolSpec], progress: Progress | None = None, *, prune: bool = True
    ) -> SyncReport:
        """Embed new and changed functions; with `prune`, delete the ones not in `specs`."""
        wanted: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.qualified_name in wanted:
                raise DuplicateFunctionError(f"duplicate function {spec.qualified_name}")
            wanted[spec.qualified_name] = spec
        stored = self.stored_hashes()
        new = [q for q in wanted if q not in stored]
        changed = [q for q in wanted if q in stored and stored[q] != wanted[q].content_hash]
        removed = [q for q in stored if q not in wanted] if prune else []
        embedded = self._upsert([wanted[q] for q in new + changed], progress)
        with self._chroma("write"):
            for start in range(0, len(removed), BATCH * 4):
                self._collection.delete(ids=removed[start : start + BATCH * 4])
        return SyncReport(
            added=len(new),
            updated=len(changed),
            removed=len(removed),
            unchanged=len(wanted) - len(new) - len(changed),
            embedded=embedded,
        )

    def _upsert(self, specs: Sequence[ToolSpec], progress: Progress | None) -> int:
        total = len(specs)
        if progress:
            progress(0, total)
        for start in range(0, total, BATCH):
            batch = specs[start : start + BATCH]
            texts = [s.embedding_text() for s in batch]
            vectors = self.embedder.embed(texts)
            if len(vectors) != len(batch) or any(len(v) != self.embedder.dim for v in vectors):
                raise IndexError_(
                    f"embedder {self.embedder.name} returned vectors of the wrong shape",
                    hint="check the embedding model installation",
                )
            with self._chroma("write"):
                self._collection.upsert(
                    ids=[s.qualified_name for s in batch],
                    embeddings=vectors,  # type: ignore[arg-type]
                    documents=texts,
                    metadatas=[
                        {
                            "content_hash": s.content_hash,
                            "plugin": s.plugin,
                            "name": s.name,
                            "qualified_name": s.qualified_name,
                        }
                        for s in batch
                    ],
                )
            if progress:
                progress(min(start + BATCH, total), total)
        return total

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
        n = self.count()
        if top_k <= 0 or n == 0 or not texts:
            return []
        vectors = self.embedder.embed(texts)
        where: dict[str, Any] | None = None
        if among is not None:
            where = {"qualified_name": {"$in": among}} if len(among) > 1 else {
                "qualified_name": among[0]
            }
        with self._chroma("search"):
            res = self._collection.query(
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
