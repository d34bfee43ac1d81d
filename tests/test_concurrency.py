"""Several processes on one LOCALAGENT_HOME, and a corrupt index: real Chroma, real lock.

Without the lock, plain Chroma 1.5 already fails here: four processes opening one empty
folder at once race on its SQLite migrations ("table collections already exists").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from index_worker import HashEmbedder, plan

from localagent.retrieval import MiniLMEmbedder, ToolIndex
from localagent.retrieval.dataset import load_tools
from localagent.retrieval.store import SQLITE_NAME
from localagent.tools.registry import default_registry

WORKER = Path(__file__).resolve().parent / "index_worker.py"
ROUNDS = 6


def _localagent(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "localagent"
    return [str(script), *args]


def test_four_writers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), str(path), str(w), str(ROUNDS)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        for w in range(4)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err[-2000:]
    synced: dict[str, str] = {}
    for out, _ in outs:
        synced.update(json.loads(out))
    expected = {s.qualified_name: s.content_hash for w in range(4) for r in plan(w, ROUNDS)
                for s in r}
    assert synced == expected
    index = ToolIndex(path, HashEmbedder())
    stored = index.stored_hashes()
    assert stored == expected  # every function once, with its own hash: nothing lost
    assert index.count() == len(expected)  # ids are unique in Chroma: nothing duplicated
    assert index.warnings == []


def test_four_cli_processes_on_one_home(tmp_path: Path, small_model_path: Path) -> None:
    """`tools index` twice, `tools search` and one `run` (default model) at once."""
    env = {**os.environ, "LOCALAGENT_HOME": str(tmp_path / "home")}
    env.pop("LOCALAGENT_INDEX_DIR", None)
    env.pop("LOCALAGENT_CHROMA_URL", None)
    commands = [
        _localagent("tools", "index", "--examples"),
        _localagent("tools", "search", "subtract one number from another", "--examples"),
        _localagent("run", "Convert the text 'hello world' to uppercase.", "--examples",
                    "--json"),
        _localagent("tools", "index", "--examples"),
    ]
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=REPO) for c in commands]
    outs = [p.communicate(timeout=900) for p in procs]
    for command, proc, (out, err) in zip(commands, procs, outs):
        assert proc.returncode == 0, (command[1:3], err[-2000:])
        assert "Traceback" not in err and "warning" not in err, err[-2000:]
    assert "DemoPlugin.Diff" in outs[1][0]
    answer = json.loads(outs[2][0])["answer"]
    assert str(answer) == "HELLO WORLD", answer
    specs = default_registry([], examples=True).specs()
    index = ToolIndex(tmp_path / "home" / "index", MiniLMEmbedder())
    assert index.stored_hashes() == {s.qualified_name: s.content_hash for s in specs}


# --- a corrupt folder is set aside and rebuilt ----------------------------------------------


N_CORRUPT = 200
BUILD = f"""
import sys
sys.path.insert(0, "tests")
from index_worker import HashEmbedder
from localagent.retrieval.dataset import load_tools
from localagent.retrieval.index import ToolIndex
ToolIndex(sys.argv[1], HashEmbedder()).sync(load_tools()[:{N_CORRUPT}])
"""


def _damage(file: Path, how: str) -> None:
    size = file.stat().st_size
    if how == "truncated":
        os.truncate(file, size // 2)
    elif how == "emptied":
        os.truncate(file, 0)
    else:  # garbage over the middle third, the header intact
        with file.open("r+b") as handle:
            handle.seek(size // 3)
            handle.write(os.urandom(size // 3))


@pytest.mark.parametrize("how", ["truncated", "emptied", "overwritten"])
def test_corrupt_index_is_set_aside_rebuilt_and_warned(
    tmp_path: Path, how: str, capfd: pytest.CaptureFixture[str]
) -> None:
    specs = load_tools()[:N_CORRUPT]
    path = tmp_path / "idx"
    built = subprocess.run([sys.executable, "-c", BUILD, str(path)], capture_output=True,
                           text=True, cwd=REPO, check=False)  # another process built it
    assert built.returncode == 0, built.stderr
    _damage(path / SQLITE_NAME, how)
    damaged = (path / SQLITE_NAME).read_bytes()
    capfd.readouterr()
    index = ToolIndex(path, HashEmbedder())
    err = capfd.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("warning: "), err
    assert "corrupt" in err and "rebuilding" in err
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("idx.corrupt-")]
    assert len(aside) == 1 and aside[0].name in err
    # kept, not deleted (Chroma's failed open may have written into it, so the size only)
    assert (aside[0] / SQLITE_NAME).stat().st_size == len(damaged)
    report = index.sync(specs)
    assert report.added == len(specs) and report.embedded == len(specs)
    assert index.stored_hashes() == {s.qualified_name: s.content_hash for s in specs}
    best = index.search(specs[7].embedding_text(), top_k=1)[0]
    assert best.qualified_name == specs[7].qualified_name
    assert ToolIndex(path, HashEmbedder()).warnings == []  # the rebuilt folder opens cleanly
