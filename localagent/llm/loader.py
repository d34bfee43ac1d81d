"""`load_llm`: turn a catalog name or a .gguf path into a ready `LLM`.

Why the checks happen here and not in llama.cpp: llama.cpp reports a bad file with a C
log on stderr and a bare ValueError. We look at the file first (exists? GGUF magic?) so
the user gets one typed error that names the problem, and only then hand it over.
"""

from __future__ import annotations

import os
from pathlib import Path

from localagent.errors import ModelFileError, ModelNotFoundError
from localagent.llm.base import LLM
from localagent.llm.catalog import CatalogEntry, default_model_name, load_catalog

GGUF_MAGIC = b"GGUF"
MIN_GGUF_BYTES = 24  # magic, version, tensor count, metadata count
DEFAULT_N_CTX = 4096  # for a path outside the catalog


def load_llm(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    seed: int = 0,
    temperature: float = 0.0,
    verbose: bool = False,
    remote: bool = True,
) -> LLM:
    """Load a model by catalog name or .gguf path (default: `$LOCALAGENT_MODEL`, else the
    catalog's default). Bad input raises ModelNotFoundError / ModelFileError /
    WeightsPackageMissingError before llama.cpp sees anything.

    With `remote`, a server URL (`http://HOST:PORT/v1#MODEL`) or `$LOCALAGENT_BASE_URL`
    gives a `RemoteLLM` instead, connected and checked by its grammar canary
    (`llm/remote.py`); n_ctx, n_threads and verbose then do not apply."""
    if remote:
        from localagent.llm.remote import RemoteLLM, remote_spec

        spec = remote_spec(name_or_path, default_model=default_model_name())
        if spec is not None:
            return RemoteLLM(spec, temperature=temperature, seed=seed)
    path, entry = resolve_model(name_or_path)
    from localagent.llm.llama import LlamaCppLLM  # imports llama_cpp: only when loading

    return LlamaCppLLM(
        path,
        name=entry.name if entry else path.stem,
        n_ctx=n_ctx or (entry.n_ctx if entry else DEFAULT_N_CTX),
        n_threads=n_threads or physical_cores(),
        seed=seed,
        temperature=temperature,
        verbose=verbose,
        entry=entry,
    )


def resolve_model(name_or_path: str | os.PathLike[str] | None) -> tuple[Path, CatalogEntry | None]:
    """The verified GGUF path for a name or path, and its catalog entry (None for a path)."""
    from localagent.llm.assemble import ensure_model

    catalog = load_catalog()
    target = str(name_or_path) if name_or_path is not None else default_model_name(catalog)
    if target in catalog:
        entry = catalog.get(target)
        return ensure_model(entry), entry
    if _looks_like_path(target):
        path = Path(target).expanduser()
        check_gguf_file(path)
        return path, None
    catalog.get(target)  # raises ModelNotFoundError with the closest names
    raise AssertionError("unreachable")


def check_gguf_file(path: Path) -> None:
    """Reject what is plainly not a GGUF file, with an error that says why."""
    if not path.exists():
        raise ModelNotFoundError(f"model file not found: {path}")
    if not path.is_file():
        raise ModelFileError(f"{path} is not a file")
    try:
        with open(path, "rb") as f:
            head = f.read(MIN_GGUF_BYTES)
    except OSError as exc:
        raise ModelFileError(f"cannot read {path}: {exc.strerror}") from None
    if head[:4] != GGUF_MAGIC:
        raise ModelFileError(f"{path} is not a GGUF file (it does not start with b'GGUF')")
    if len(head) < MIN_GGUF_BYTES:
        raise ModelFileError(f"{path} is a truncated GGUF file ({len(head)} bytes)")


def physical_cores() -> int:
    """Physical cores we may run on: llama.cpp gains nothing from hyper-threads.

    os.cpu_count() counts logical CPUs; we count distinct (package, core) pairs from
    /sys topology among the CPUs this process may use, else fall back to the logical count.
    """
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = list(range(os.cpu_count() or 1))
    cores: set[tuple[str, str]] = set()
    for cpu in allowed:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topo / "physical_package_id").read_text().strip(),
                       (topo / "core_id").read_text().strip()))
        except OSError:
            return max(1, len(allowed))
    return max(1, len(cores) or len(allowed))


def _looks_like_path(target: str) -> bool:
    return (target.endswith(".gguf") or os.sep in target or "/" in target
            or Path(target).expanduser().exists())
