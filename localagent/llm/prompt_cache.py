"""The prompt cache: the model's KV state for a prompt prefix, kept on disk across processes.

Why: a new process starts with an empty KV cache, so every `localagent run` evaluated its
whole prompt again (1,337 tokens, about 12 s on a 2-core machine, for the README's goal),
although most of it (instructions, examples, much of the manual) is the same in every run
over the same tools. llama-cpp-python's own `LlamaDiskCache` does not do the job: it
pickles a `LlamaState` (unpickling a file is trusting it), `Llama.save_state` copies the
whole logits buffer into that state (n_batch x n_vocab floats: about 300 MB for Qwen2.5),
a lookup pops the entry off the disk, eviction is by insertion order, and an entry is not
tied to the model file or the llama.cpp build. We store llama.cpp's own per-sequence KV
state (`llama_state_seq_get_data`: about 12 KiB a token for the default model) in a file of
our own format.

Entry file: `MAGIC`, format version, header length, sha256 of everything after it, a JSON
header (model sha256, build, context, token count, payload size), the prefix tokens
(int32), the payload. An entry lives in a folder named after its identity (model sha256,
llama.cpp build, context parameters), named after a hash of identity and tokens. A file
with a wrong magic, a bad checksum, a short read, or another identity in its header is
ignored and deleted, never loaded; the next call then saves a fresh entry. Writes are
atomic (a temporary file renamed) under a `filelock`, so processes never see half a file;
the least recently used entries (file mtime, touched on every load) are evicted when the
folder grows past the size cap.

Which prefix is saved (`plan_use`): the cache cannot know which part of a prompt depends
on the goal, so it learns it. A prompt with nothing useful on disk is saved whole (minus
its last token, which llama.cpp evaluates anyway to get fresh logits); the next prompt
that shares only a part of a stored one (another goal over the same tools) loads that
entry, keeps the shared tokens, and saves them as an entry of their own: the
goal-independent prefix. Later prompts find it, or a whole stored prompt when a goal
repeats.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from localagent.llm.base import common_prefix

MAGIC = b"LAKVPRE\x00"
FORMAT_VERSION = 1
_FIXED = struct.Struct("<8sII32s")  # magic, version, header length, sha256 of the rest
SUFFIX = ".kv"
MIN_PREFIX = 128  # shorter prompts are not worth a file (128 tokens: about 0.8 s to evaluate
# on 2 cores, 1.5 MiB and milliseconds to load; the goal translation's few-shot prompt,
# about 180 tokens, is cached across processes only from this size down)
MIN_GAIN = 64  # a load must reuse, a save must add, at least this many tokens
DEFAULT_CAP_BYTES = 1 << 30


@dataclass(frozen=True)
class CacheIdentity:
    """What a KV state is valid for: the model's bytes, the llama.cpp build, the context."""

    model_sha256: str
    build: str
    context: str  # e.g. "n_ctx=8192 extra_bufts=1"

    @property
    def folder(self) -> str:
        return _digest(self.model_sha256, self.build, self.context)[:20]

    def header(self) -> dict[str, str]:
        return {"model_sha256": self.model_sha256, "build": self.build,
                "context": self.context}


@dataclass(frozen=True)
class Entry:
    """A stored prefix, as its header describes it (the payload is read only on load)."""

    path: Path
    tokens: tuple[int, ...]
    size: int  # bytes on disk
    used: float  # mtime: last save or load


@dataclass(frozen=True)
class CachePlan:
    """What one call does with the cache: restore `load` (None: keep what is in memory),
    keep the first `start` prompt tokens, then evaluate and save each prefix length in
    `checkpoints` (ascending) before generating."""

    load: Entry | None
    start: int
    checkpoints: tuple[int, ...]


def plan_use(prefix: Sequence[int], in_memory: int, entries: Sequence[Entry]) -> CachePlan:
    """Decide loads and saves for a prompt whose cacheable part is `prefix` (the prompt
    without its last token), when `in_memory` of its tokens are in the KV cache already.

    - load the stored entry sharing the most tokens with `prefix` when that reuses at
      least MIN_GAIN tokens more than memory does;
    - save the shared part when an entry diverges from `prefix` after MIN_PREFIX or more
      shared tokens (two different prompts agree on it: the goal-independent prefix),
      unless a stored exact prefix already covers all but MIN_GAIN of it, and unless memory
      holds more of this prompt than that part (truncating would throw the rest away);
    - save the whole `prefix` when the disk lacks at least MIN_GAIN of its tokens.
    Prompts shorter than MIN_PREFIX tokens never touch the disk.
    """
    n = len(prefix)
    if n < MIN_PREFIX:
        return CachePlan(None, in_memory, ())
    best: Entry | None = None
    shared = exact = 0
    for entry in entries:
        k = common_prefix(entry.tokens, prefix)
        if k == len(entry.tokens):
            exact = max(exact, k)
        better = k > shared or (k == shared and best is not None
                                and len(entry.tokens) < len(best.tokens))
        if k > 0 and better:
            best, shared = entry, k
    load = best if best is not None and shared >= MIN_PREFIX and shared >= in_memory + MIN_GAIN \
        else None
    start = shared if load is not None else in_memory
    checkpoints: list[int] = []
    diverges = best is not None and shared < len(best.tokens)
    if (diverges and MIN_PREFIX <= shared < n and shared - exact >= MIN_GAIN
            and start <= shared):
        checkpoints.append(shared)
    if n - shared >= MIN_GAIN:
        checkpoints.append(n)
    return CachePlan(load, start, tuple(c for c in checkpoints if c >= start))


class PromptCache:
    """Stored KV states for one identity under `root` (shared by every identity's cap).

    Thread and process safe: reads need no lock (files appear by atomic rename), writes,
    deletions and eviction take `root/.lock`.
    """

    def __init__(self, root: Path, identity: CacheIdentity,
                 cap_bytes: int = DEFAULT_CAP_BYTES) -> None:
        self.root = root
        self.identity = identity
        self.cap_bytes = cap_bytes
        self.folder = root / identity.folder

    # --- reading ---------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """This identity's entries whose header reads well; a malformed or foreign file is
        deleted (its payload is checked only by `load`)."""
        found = []
        for path in sorted(self.folder.glob(f"*{SUFFIX}")):
            try:
                with open(path, "rb") as f:
                    header, tokens = _read_header(f)
                stat = path.stat()
            except FileNotFoundError:
                continue  # evicted by another process meanwhile
            except (OSError, ValueError):
                self._discard(path)
                continue
            if not self._ours(header, path, tokens):
                self._discard(path)
                continue
            found.append(Entry(path, tokens, stat.st_size, stat.st_mtime))
        return found

    def load(self, entry: Entry) -> bytes | None:
        """The entry's payload after checking magic, checksum, identity and tokens; None
        (and the file deleted) when any check fails. A load counts as a use (LRU)."""
        try:
            data = entry.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            self._discard(entry.path)
            return None
        try:
            payload = self._verified_payload(data, entry)
        except ValueError:
            self._discard(entry.path)
            return None
        with contextlib.suppress(OSError):
            os.utime(entry.path)
        return payload

    # --- writing ---------------------------------------------------------------------

    def save(self, tokens: Sequence[int], payload: bytes) -> Path | None:
        """Store `payload` as the state after `tokens`; then evict the least recently used
        entries (of any identity) past the cap. None when one entry alone exceeds it."""
        tokens = tuple(int(t) for t in tokens)
        token_bytes = struct.pack(f"<{len(tokens)}i", *tokens)
        header = json.dumps({**self.identity.header(), "n_tokens": len(tokens),
                             "payload_bytes": len(payload)}, sort_keys=True).encode()
        body = header + token_bytes + payload
        fixed = _FIXED.pack(MAGIC, FORMAT_VERSION, len(header), hashlib.sha256(body).digest())
        if len(fixed) + len(body) > self.cap_bytes:
            return None
        path = self.folder / (_digest(self.identity.folder, token_bytes.hex())[:32] + SUFFIX)
        with self._locked():
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(fixed)
                    f.write(body)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            self._evict(keep=path)
        return path

    def evict(self) -> list[Path]:
        """Delete least recently used entries until all of `root` fits the cap."""
        with self._locked():
            return self._evict(keep=None)

    def size(self) -> int:
        """Bytes of every stored entry under `root` (all identities)."""
        return sum(size for _, size, _ in _all_entries(self.root))

    # --- internals -------------------------------------------------------------------

    def _ours(self, header: dict[str, object], path: Path, tokens: tuple[int, ...]) -> bool:
        expected = self.identity.header()
        if any(header.get(k) != v for k, v in expected.items()):
            return False
        token_bytes = struct.pack(f"<{len(tokens)}i", *tokens)
        return path.name == _digest(self.identity.folder, token_bytes.hex())[:32] + SUFFIX

    def _verified_payload(self, data: bytes, entry: Entry) -> bytes:
        if len(data) < _FIXED.size:
            raise ValueError("short file")
        magic, version, header_len, digest = _FIXED.unpack_from(data)
        if magic != MAGIC or version != FORMAT_VERSION:
            raise ValueError("not a prompt-cache entry of this format")
        body = data[_FIXED.size:]
        if hashlib.sha256(body).digest() != digest:
            raise ValueError("checksum mismatch")
        header = json.loads(body[:header_len])
        n = int(header["n_tokens"])
        token_bytes = body[header_len:header_len + 4 * n]
        tokens = struct.unpack(f"<{n}i", token_bytes)
        if tokens != entry.tokens or not self._ours(header, entry.path, tokens):
            raise ValueError("foreign entry")
        payload = body[header_len + 4 * n:]
        if len(payload) != int(header["payload_bytes"]) or not payload:
            raise ValueError("payload size mismatch")
        return payload

    def _evict(self, keep: Path | None) -> list[Path]:
        stored = sorted(_all_entries(self.root), key=lambda e: e[2])  # oldest first
        total = sum(size for _, size, _ in stored)
        removed = []
        for path, size, _ in stored:
            if total <= self.cap_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            total -= size
            removed.append(path)
        return removed

    def _discard(self, path: Path) -> None:
        with self._locked(), contextlib.suppress(FileNotFoundError):
            path.unlink()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root / ".lock"), timeout=60):
            yield


def _read_header(f: BinaryIO) -> tuple[dict[str, object], tuple[int, ...]]:
    """The JSON header and tokens of an open entry file; ValueError when malformed."""
    read = f.read
    fixed = read(_FIXED.size)
    if len(fixed) < _FIXED.size:
        raise ValueError("short file")
    magic, version, header_len, _ = _FIXED.unpack(fixed)
    if magic != MAGIC or version != FORMAT_VERSION or header_len > 1 << 16:
        raise ValueError("not a prompt-cache entry of this format")
    try:
        header = json.loads(read(header_len))
        n = int(header["n_tokens"])
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"bad header: {exc}") from None
    token_bytes = read(4 * n)
    if n < 1 or len(token_bytes) != 4 * n:
        raise ValueError("short token list")
    return header, struct.unpack(f"<{n}i", token_bytes)


def _all_entries(root: Path) -> list[tuple[Path, int, float]]:
    found = []
    for path in root.glob(f"*/*{SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            stat = path.stat()
            found.append((path, stat.st_size, stat.st_mtime))
    return found


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


# --- identity ------------------------------------------------------------------------


def cache_root(home: Path | None = None) -> Path:
    """`$LOCALAGENT_HOME/prompt_cache`."""
    from localagent.paths import home_dir

    return (home or home_dir()) / "prompt_cache"


def file_sha256(path: Path, root: Path) -> str:
    """The sha256 of a model file, computed once and remembered by path, size and mtime
    (in `root/model_sha256.json`): a user's .gguf has no catalog entry to give it."""
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo = root / "model_sha256.json"
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    cached = known.get(key)
    if isinstance(cached, str) and len(cached) == 64:
        return cached
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    known[key] = h.hexdigest()
    with contextlib.suppress(OSError):
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(known, f)
        os.replace(tmp, memo)
    return known[key]


@lru_cache(maxsize=1)
def llama_build() -> str:
    """The llama.cpp build: llama-cpp-python's version, llama.cpp's system info (CPU
    features it was built for and found), and a hash of its shared libraries' bytes."""
    import llama_cpp

    lib = Path(llama_cpp.__file__).resolve().parent / "lib"
    h = hashlib.sha256()
    for path in sorted(lib.glob("lib*.so*")) + sorted(lib.glob("*.dylib")) + \
            sorted(lib.glob("*.dll")):
        if path.is_file() and not path.is_symlink():
            h.update(path.name.encode())
            h.update(path.read_bytes())
    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return f"llama-cpp-python {llama_cpp.__version__}; {info}; libs {h.hexdigest()[:16]}"
