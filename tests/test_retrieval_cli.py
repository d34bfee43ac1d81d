"""`localagent tools index|search` as a user runs them: real Chroma, real MiniLM, real exit codes."""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import run_cli


def _env(path: Path) -> dict[str, str]:
    return {"LOCALAGENT_INDEX_DIR": str(path)}


def _embedded(stdout: str) -> int:
    match = re.search(r"embedded (\d+)", stdout)
    assert match, stdout
    return int(match.group(1))


def test_index_twice_then_search(tmp_path: Path) -> None:
    env = _env(tmp_path / "idx")
    first = run_cli("tools", "index", "--examples", env=env)
    assert first.returncode == 0, first.stderr
    assert _embedded(first.stdout) > 5
    second = run_cli("tools", "index", "--examples", env=env)
    assert second.returncode == 0, second.stderr
    assert _embedded(second.stdout) == 0
    found = run_cli("tools", "search", "subtract one number from another", "--top-k", "3",
                    "--examples", env=env)
    assert found.returncode == 0, found.stderr
    assert "DemoPlugin.Diff" in found.stdout and "score" in found.stdout
    rows = [line for line in found.stdout.splitlines() if re.search(r"\d\.\d{3}", line)]
    assert len(rows) == 3


def test_corrupt_index_is_set_aside_with_one_warning_line(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    path.mkdir()
    (path / "chroma.sqlite3").write_bytes(os.urandom(4096))
    found = run_cli("tools", "search", "subtract one number from another", "--examples",
                    env=_env(path))
    assert found.returncode == 0, found.stderr
    assert "Traceback" not in found.stderr
    assert len(found.stderr.strip().splitlines()) == 1, found.stderr
    assert found.stderr.startswith("warning:") and "corrupt" in found.stderr
    assert "DemoPlugin.Diff" in found.stdout
    again = run_cli("tools", "index", "--examples", env=_env(path))
    assert again.returncode == 0 and _embedded(again.stdout) == 0, again.stderr
    assert again.stderr.strip() == ""


def test_bad_top_k_is_usage_error(tmp_path: Path) -> None:
    result = run_cli("tools", "search", "weather", "--top-k", "0", env=_env(tmp_path / "i"))
    assert result.returncode == 2
