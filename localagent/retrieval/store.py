"""Where the tool index's Chroma client comes from: a folder on disk, or a Chroma server.

Why a module of its own: the two places differ in everything around the collection and in
nothing inside it. `ToolIndex` (index.py) only asks a store for a client within a
*session* and does the same sync and search over either.

**On disk (`LocalStore`).** Chroma's `PersistentClient` is not safe for several processes
at once (Chroma's own docs, "system constraints"; chroma-core/chroma#7040: two processes
opening one folder wait on SQLite for up to 1000 s; concurrent writers corrupt the HNSW
files). So every session holds an exclusive `filelock` lock on `.<folder>.lock` beside the
folder (`$LOCALAGENT_HOME/.index.lock` by default; outside the folder, so `--rebuild` cannot
delete a lock another process holds). A client stays open between sessions, but each write
stamps a fresh token in `localagent-generation`; a session that finds another token (another
process wrote, or rebuilt the folder) closes its client and opens a new one, so no process
searches or writes through a stale in-memory HNSW graph. A folder that cannot be opened
(not SQLite, truncated, malformed) is renamed `<folder>.corrupt-<UTC time>` and a fresh one
is made, with one warning line on stderr; the next sync re-embeds every function. Errors
that are not corruption (not writable, locked by a foreign process, another embedding
model) are raised, never set aside.

**Over HTTP (`RemoteStore`).** The server owns its files and serializes writes, so no
client-side lock: correctness across clients rests on deterministic ids (one id per
qualified function name) and `upsert`, which is idempotent per id, and on
`get_or_create_collection`, which the server performs atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.errors import IndexError_, LocalAgentError
from localagent.retrieval.server import URL_ENV, ChromaServer

MANIFEST_NAME = "localagent-index.json"
GENERATION_NAME = "localagent-generation"
SQLITE_NAME = "chroma.sqlite3"
SQLITE_HEADER = b"SQLite format 3\x00"
SCHEMA_VERSION = 1
REBUILD_HINT = "rebuild it with: localagent tools index --rebuild"
LOCK_TIMEOUT_S = 300.0

Probe = Callable[[Any], object]


def warn(message: str) -> None:
    """One warning line on stderr (the CLI's convention: `warning: ...`)."""
    print(f"warning: {' '.join(message.split())}", file=sys.stderr, flush=True)


def describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _unwritable(text: str) -> bool:
    return "readonly" in text or "read-only" in text or "ermission" in text


def _busy(text: str) -> bool:
    return "database is locked" in text or "SQLITE_BUSY" in text


def _passes_through(exc: BaseException) -> bool:
    return isinstance(exc, (LocalAgentError, KeyboardInterrupt, SystemExit, GeneratorExit))


def _close(client: Any) -> None:
    """Release a Chroma client's files (Client.close, chromadb >= 1.1; else drop the cache)."""
    if client is None:
        return
    close = getattr(client, "close", None)
    with suppress(Exception):  # a client that fails to close is dropped anyway
        if callable(close):
            close()
        else:  # pragma: no cover - older chromadb 1.x
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()


def _drop_system(path: Path) -> None:
    """Forget Chroma's cached `System` for `path`. Chroma keeps one per folder per process
    (`SharedSystemClient`, keyed by the folder); after a failed open it is half-started,
    and every later `PersistentClient` on the folder would reuse the broken one."""
    from chromadb.api.shared_system_client import SharedSystemClient

    for key in {str(path), str(path.resolve())}:
        system = SharedSystemClient._identifier_to_system.pop(key, None)
        SharedSystemClient._identifier_to_refcount.pop(key, None)
        if system is not None:
            with suppress(Exception):
                system.stop()


# --- on disk -------------------------------------------------------------------------------


@dataclass
class _Open:
    """The one open client per index folder in this process, and the token it was opened at."""

    client: Any
    token: str


_THREAD_LOCK = threading.RLock()  # one session at a time per process (reentrant)
_OPEN: dict[str, _Open] = {}
_FILE_LOCKS: dict[str, Any] = {}


class LocalStore:
    """A `PersistentClient` folder, shared safely by the processes of one machine."""

    remote = False

    def __init__(self, path: Path, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self.location = str(path)
        self.lock_path = path.parent / f".{path.name or 'index'}.lock"
        self.lock_timeout = lock_timeout
        self.warnings: list[str] = []  # the warnings this store printed (set-aside folders)

    # --- the folder ---------------------------------------------------------------------

    def looks_like_index(self) -> bool:
        return (self.path / MANIFEST_NAME).is_file() or (self.path / SQLITE_NAME).exists()

    def check_location(self) -> None:
        """The folder's parent exists (so the lock file can live there); the path is no file."""
        hint = "choose a writable folder with LOCALAGENT_INDEX_DIR"
        if self.path.exists() and not self.path.is_dir():
            raise IndexError_(f"the tool index path {self.path} is not a folder", hint=hint)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexError_(
                f"cannot create the tool index folder {self.path}: {exc.strerror or exc}",
                hint=hint,
            ) from exc

    def _prepare_dir(self) -> None:
        hint = "choose a writable folder with LOCALAGENT_INDEX_DIR"
        self.check_location()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexError_(
                f"cannot create the tool index folder {self.path}: {exc.strerror or exc}",
                hint=hint,
            ) from exc
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise IndexError_(f"the tool index folder {self.path} is not writable", hint=hint)
        if any(self.path.iterdir()) and not self.looks_like_index():
            raise IndexError_(
                f"{self.path} is not empty and is not a localagent tool index",
                hint="set LOCALAGENT_INDEX_DIR to an empty or index folder",
            )

    def wipe(self, collection: str) -> None:
        """`--rebuild`: delete the folder, but only one that is (or looks like) ours."""
        del collection  # the whole folder goes: one folder per home
        self.check_location()
        with self._locked():
            self._forget()
            if not self.path.exists():
                return
            if not (self.looks_like_index() or not any(self.path.iterdir())):
                raise IndexError_(
                    f"refusing to rebuild {self.path}: it is not a localagent tool index",
                    hint="set LOCALAGENT_INDEX_DIR to an empty or index folder",
                )
            try:
                shutil.rmtree(self.path)
            except OSError as exc:
                raise IndexError_(
                    f"cannot delete the tool index at {self.path}: {exc}",
                    hint="check its permissions, or set LOCALAGENT_INDEX_DIR to another folder",
                ) from exc

    def write_manifest(self, collection: str, meta: dict[str, Any]) -> None:
        """Marks the folder as ours (so --rebuild may delete it) and says what is inside."""
        manifest_path = self.path / MANIFEST_NAME
        with self._locked(), self.errors("write"):
            try:
                data = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
            except (OSError, ValueError):
                data = {}
            collections = data.get("collections", {}) if isinstance(data, dict) else {}
            collections[collection] = {
                k: meta[k] for k in ("embedding_model", "embedding_dim", "embedding_fingerprint")
            }
            text = json.dumps({"schema": SCHEMA_VERSION, "collections": collections}, indent=2)
            _atomic_write(manifest_path, text)

    # --- sessions -------------------------------------------------------------------------

    def _file_lock(self) -> Any:
        from filelock import FileLock

        key = str(self.lock_path)
        with _THREAD_LOCK:
            if key not in _FILE_LOCKS:
                _FILE_LOCKS[key] = FileLock(key, timeout=self.lock_timeout)
            return _FILE_LOCKS[key]

    @contextmanager
    def _locked(self) -> Iterator[None]:
        from filelock import Timeout

        with _THREAD_LOCK:
            try:
                lock = self._file_lock()
                lock.acquire()
            except Timeout:
                raise IndexError_(
                    f"the tool index at {self.path} stayed locked by another process for "
                    f"{self.lock_timeout:.0f} s (lock file {self.lock_path})",
                    hint="wait for the other localagent command to finish, then try again",
                ) from None
            except OSError as exc:
                raise IndexError_(
                    f"cannot lock the tool index at {self.path}: {exc.strerror or exc}",
                    hint="choose a writable folder with LOCALAGENT_INDEX_DIR",
                ) from exc
            try:
                yield
            finally:
                lock.release()

    def _token(self) -> str:
        try:
            return (self.path / GENERATION_NAME).read_text().strip()
        except OSError:
            return ""

    def _stamp(self) -> str:
        token = uuid.uuid4().hex
        with self.errors("write"):
            _atomic_write(self.path / GENERATION_NAME, token)
        return token

    def _forget(self) -> None:
        entry = _OPEN.pop(self.location, None)
        if entry is not None:
            _close(entry.client)
        _drop_system(self.path)

    @contextmanager
    def session(self, probe: Probe, *, write: bool = False) -> Iterator[tuple[Any, bool]]:
        """Yields (client, fresh) under the lock; `fresh` when the client was (re)opened, so
        collections taken from an older client must be taken again. After a `write`
        session the folder carries a new token, so other processes reopen."""
        self.check_location()
        with self._locked():
            token = self._token()
            entry = _OPEN.get(self.location)
            fresh = entry is None or not token or entry.token != token
            if fresh:
                self._forget()
                client = self._open(probe)
                entry = _OPEN[self.location] = _Open(client, self._token() or self._stamp())
            assert entry is not None
            try:
                with self.errors("use"):
                    yield entry.client, fresh
            except BaseException:
                if write:  # a failed write may have changed some entries: others reopen
                    with suppress(Exception):
                        entry.token = self._stamp()
                raise
            if write:
                entry.token = self._stamp()

    def _new_client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        return chromadb.PersistentClient(
            path=str(self.path), settings=Settings(anonymized_telemetry=False)
        )

    def _open(self, probe: Probe) -> Any:
        """A client whose collection passed `probe`; a corrupt folder is set aside first."""
        self._prepare_dir()
        reason = self._bad_sqlite_file()
        if reason is None:
            client = None
            try:
                client = self._new_client()
                client.list_collections()  # reads the database now, not at the first search
                probe(client)
                return client
            except BaseException as exc:
                _close(client)
                _drop_system(self.path)
                text = describe(exc)
                if _passes_through(exc) or _unwritable(text) or _busy(text):
                    with self.errors("open"):
                        raise
                reason = text
        self._set_aside(reason)
        self._prepare_dir()
        with self.errors("open"):
            client = self._new_client()
            client.list_collections()
            probe(client)
        return client

    def _bad_sqlite_file(self) -> str | None:
        """Why chroma.sqlite3 is certainly not a database (garbage, cut to nothing), or None.
        Cheaper and surer than waiting for Chroma's Rust core to fail on it."""
        file = self.path / SQLITE_NAME
        if not file.exists():
            return None
        try:
            with file.open("rb") as handle:
                head = handle.read(len(SQLITE_HEADER))
        except OSError:
            return None  # unreadable: let Chroma report it (permissions are not corruption)
        if head == SQLITE_HEADER:
            return None
        return f"{SQLITE_NAME} is not an SQLite database ({file.stat().st_size} bytes)"

    def _set_aside(self, reason: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        self._forget()
        try:
            os.replace(self.path, target)
        except OSError as exc:
            raise IndexError_(
                f"the tool index at {self.path} is corrupt ({reason}) and cannot be moved "
                f"aside: {exc.strerror or exc}",
                hint=REBUILD_HINT,
            ) from exc
        message = (
            f"the tool index at {self.path} was corrupt or unreadable ({reason}); "
            f"moved it to {target.name} and rebuilding it"
        )
        self.warnings.append(message)
        warn(message)

    @contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Any Chroma/sqlite failure becomes one clear IndexError_."""
        try:
            yield
        except BaseException as exc:  # also pyo3's PanicException from Chroma's Rust core
            if _passes_through(exc):
                raise
            text = describe(exc)
            unwritable = _unwritable(text)
            raise IndexError_(
                f"cannot {action} the tool index at {self.path} "
                f"({'not writable' if unwritable else 'corrupt or unreadable'}): {text}",
                hint="choose a writable folder with LOCALAGENT_INDEX_DIR"
                if unwritable
                else REBUILD_HINT,
            ) from exc


def _atomic_write(path: Path, text: str) -> None:
    """Write `text` to a unique temporary file beside `path`, then rename it over `path`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


# --- over HTTP -----------------------------------------------------------------------------


class RemoteStore:
    """An `HttpClient` to one Chroma server, opened on the first session."""

    remote = True
    path: Path | None = None

    def __init__(self, server: ChromaServer) -> None:
        self.server = server
        self.location = server.url
        self._client: Any = None
        self._lock = threading.Lock()
        self.warnings: list[str] = []

    def _connect(self) -> tuple[Any, bool]:
        with self._lock:
            if self._client is not None:
                return self._client, False
            with self.errors("connect to"):
                self._client = self.server.client()
            return self._client, True

    @contextmanager
    def session(self, probe: Probe, *, write: bool = False) -> Iterator[tuple[Any, bool]]:
        del probe, write  # the server serializes; ToolIndex opens the collection itself
        client, fresh = self._connect()
        with self.errors("use"):
            yield client, fresh

    def wipe(self, collection: str) -> None:
        """`--rebuild`: delete this model's collection on the server (nothing else there)."""
        from chromadb.errors import NotFoundError

        client, _ = self._connect()
        with self.errors("rebuild"):
            try:
                client.delete_collection(collection)
            except (NotFoundError, ValueError):
                pass  # nothing to delete (ValueError: chromadb 1.0's "does not exist")

    def write_manifest(self, collection: str, meta: dict[str, Any]) -> None:
        return None  # the collection's own metadata records the model on a server

    @contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Connection failures and server errors become one IndexError_ naming the server."""
        try:
            yield
        except BaseException as exc:
            if _passes_through(exc):
                raise
            text = describe(exc)
            lowered = text.lower()
            if any(w in lowered for w in ("connect", "timed out", "timeout", "refused")):
                raise IndexError_(
                    f"cannot reach the Chroma server at {self.location}: {text}",
                    hint=f"check that it runs and that {URL_ENV} points at it",
                ) from exc
            raise IndexError_(
                f"the Chroma server at {self.location} failed to {action} the tool index: "
                f"{text}",
                hint=REBUILD_HINT,
            ) from exc


Store = LocalStore | RemoteStore
