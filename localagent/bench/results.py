"""Raw results: one JSON line per finished run, appended and flushed as each run ends.

Why JSONL and a key per run: an interrupted benchmark (Ctrl-C, a crash, a reboot) keeps
every finished run, and the next invocation skips the keys already present. A line cut
short by a kill is ignored (and rewritten when that run is redone).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULTS_NAME = "runs.jsonl"


class ResultsFile:
    """`runs.jsonl` in an output folder: read finished runs, append new ones."""

    def __init__(self, out_dir: Path) -> None:
        self.path = Path(out_dir) / RESULTS_NAME

    def records(self) -> list[dict[str, Any]]:
        """Every complete record, the last one per key (a redone run replaces the old)."""
        by_key: dict[str, dict[str, Any]] = {}
        for record in self._read():
            by_key[record["key"]] = record
        return list(by_key.values())

    def done_keys(self) -> set[str]:
        return {r["key"] for r in self._read()}

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line and flush it to disk before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, default=str)
        self._repair_tail()
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _read(self) -> Iterator[dict[str, Any]]:
        if not self.path.is_file():
            return
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    return  # a line cut short by a kill
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("key"), str):
                    yield record

    def _repair_tail(self) -> None:
        """Drop a final partial line so the next record starts on its own line."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            data = fh.read()
            cut = data.rfind(b"\n") + 1
            fh.truncate(cut)
