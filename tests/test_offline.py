"""Offline by construction: the CLI works with networking blocked for its process.

Two locks, used together where possible: `unshare -rn` puts the process in a network
namespace with no interfaces (the kernel refuses every connection), and a sitecustomize
module that makes Python's socket layer refuse (and log) every internet connection or DNS
lookup, so the test also proves nothing even *tried* to connect.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

GUARD = '''
import os, socket

_LOG = os.environ["LOCALAGENT_NET_LOG"]

def _refuse(what):
    with open(_LOG, "a") as f:
        f.write(what + "\\n")
    raise OSError("network disabled by the offline test: " + what)

_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex

def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _refuse("connect %r" % (address,))
    return _connect(self, address)

def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _refuse("connect_ex %r" % (address,))
    return _connect_ex(self, address)

def getaddrinfo(host, *args, **kwargs):
    _refuse("getaddrinfo %r" % (host,))

socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.getaddrinfo = getaddrinfo
'''


def _unshare_prefix() -> tuple[str, ...]:
    if shutil.which("unshare") is None:
        return ()
    probe = subprocess.run(["unshare", "-rn", "true"], check=False, capture_output=True)
    return ("unshare", "-rn") if probe.returncode == 0 else ()


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    guard_dir = tmp_path / "guard"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "net.log"
    log.write_text("")
    return {"PYTHONPATH": str(guard_dir), "LOCALAGENT_NET_LOG": str(log)}


def test_guard_really_blocks(offline_env: dict[str, str]) -> None:
    """The guard itself must work, or the tests below prove nothing."""
    code = "import socket\ntry:\n    socket.create_connection(('example.com', 80), 1)\n" \
           "except OSError as e:\n    print('blocked', e)\n"
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                       env={**_base_env(), **offline_env})
    assert "blocked" in r.stdout
    assert "getaddrinfo 'example.com'" in Path(offline_env["LOCALAGENT_NET_LOG"]).read_text()


def test_generate_works_with_network_blocked(offline_env: dict[str, str],
                                             small_model_path: Path) -> None:
    prefix = _unshare_prefix()
    r = run_cli("generate", "def add(a, b):\n    return", "--max-tokens", "8",
                env=offline_env, prefix=prefix)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
    assert Path(offline_env["LOCALAGENT_NET_LOG"]).read_text() == ""


def test_heavy_dependencies_import_without_connecting(offline_env: dict[str, str]) -> None:
    """With our offline variables set (on `import localagent`), importing Chroma and
    sentence-transformers does not try the network. (Using them offline is tested with
    retrieval.)"""
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    code = "import localagent, chromadb, sentence_transformers; print('ok')"
    r = subprocess.run([*_unshare_prefix(), sys.executable, "-c", code], check=False,
                       capture_output=True,
                       text=True, env={**_base_env(), **offline_env}, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]
    assert Path(offline_env["LOCALAGENT_NET_LOG"]).read_text() == ""


def _base_env() -> dict[str, str]:
    import os

    return dict(os.environ)
