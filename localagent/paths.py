"""Where localagent keeps things on disk.

`LOCALAGENT_HOME` (default `~/.localagent`) holds user state: config, the Chroma index,
benchmark results. Assembled model files are large and shared between homes, so they live
in `LOCALAGENT_MODELS_DIR` (default: the repository's git-ignored `models/` folder when
installed from a checkout, else `<home>/models`).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent
CATALOG_PATH = REPO_DIR / "models" / "catalog.toml"
GRAMMARS_DIR = REPO_DIR / "grammars"


def home_dir() -> Path:
    return Path(os.environ.get("LOCALAGENT_HOME") or Path.home() / ".localagent").expanduser()


def models_dir() -> Path:
    env = os.environ.get("LOCALAGENT_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    if (REPO_DIR / "models" / "catalog.toml").is_file() and os.access(REPO_DIR / "models", os.W_OK):
        return REPO_DIR / "models"
    return home_dir() / "models"


def index_dir() -> Path:
    return Path(os.environ.get("LOCALAGENT_INDEX_DIR") or home_dir() / "index").expanduser()
