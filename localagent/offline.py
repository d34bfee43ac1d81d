"""Offline by construction: set the switches that stop our dependencies phoning home.

Called on `import localagent`, before sentence-transformers, transformers or chromadb are
imported anywhere. `setdefault` lets a user override a variable deliberately.
"""

from __future__ import annotations

import os

OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",  # chromadb (also passed explicitly in Settings)
    "TOKENIZERS_PARALLELISM": "false",
    "DO_NOT_TRACK": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # "Loading weights" bars on stderr of every run
}


def enforce_offline() -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
