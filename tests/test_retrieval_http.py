"""The tool index on a real `chroma run` server (LOCALAGENT_CHROMA_URL), through the real CLI.

Each test starts its own server on loopback (free port, readiness poll on
/api/v2/heartbeat) and stops it afterwards, so every test starts from an empty server.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chroma_server import chroma_server, free_port, token_proxy
from conftest import REPO, run_cli
from index_worker import HashEmbedder, plan

from localagent.errors import UsageError
from localagent.retrieval import ChromaServer, MiniLMEmbedder, ToolIndex
from localagent.retrieval.index import collection_name
from localagent.tools.registry import default_registry

WORKER = Path(__file__).resolve().parent / "index_worker.py"
ROUNDS = 6


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with chroma_server(tmp_path / "chroma-data") as url:
        yield url


def _env(tmp_path: Path, url: str, **more: str) -> dict[str, str]:
    """A fresh home whose local index folder must stay unused."""
    return {"LOCALAGENT_HOME": str(tmp_path / "home"), "LOCALAGENT_CHROMA_URL": url,
            "LOCALAGENT_INDEX_DIR": str(tmp_path / "local-index"), **more}


def _embedded(stdout: str) -> int:
    match = re.search(r"embedded (\d+)", stdout)
    assert match, stdout
    return int(match.group(1))


def _stored(url: str) -> dict[str, str]:
    """Qualified name -> content hash, read from the server by a client of our own."""
    import chromadb
    from chromadb.config import Settings

    port = int(url.rsplit(":", 1)[1])
    client = chromadb.HttpClient(host="127.0.0.1", port=port,
                                 settings=Settings(anonymized_telemetry=False))
    collection = client.get_collection(collection_name(MiniLMEmbedder()))
    got = collection.get(include=["metadatas"])
    assert len(got["ids"]) == len(set(got["ids"]))
    return {i: str(m["content_hash"]) for i, m in zip(got["ids"], got["metadatas"])}


def _hashes(examples: bool) -> dict[str, str]:
    return {s.qualified_name: s.content_hash
            for s in default_registry([], examples=examples).specs()}


def test_index_twice_then_search_over_http(tmp_path: Path, server: str) -> None:
    env = _env(tmp_path, server)
    first = run_cli("tools", "index", "--examples", env=env)
    assert first.returncode == 0, first.stderr
    assert f"index {server}:" in first.stdout.replace("\n", " ")
    assert _embedded(first.stdout) == len(_hashes(True))
    # the same server named by the config file instead of the environment
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text(f'chroma_url = "{server}"\n')
    by_file = {**env, "LOCALAGENT_CHROMA_URL": ""}
    second = run_cli("tools", "index", "--examples", env=by_file)
    assert second.returncode == 0 and _embedded(second.stdout) == 0, second.stderr
    found = run_cli("tools", "search", "subtract one number from another", "--top-k", "3",
                    "--examples", env=env)
    assert found.returncode == 0, found.stderr
    assert "DemoPlugin.Diff" in found.stdout
    assert _stored(server) == _hashes(True)
    # fewer plugins here: a shared server keeps the others' functions unless --prune
    kept = run_cli("tools", "index", env=env)
    assert kept.returncode == 0 and "removed 0" in kept.stdout, kept.stderr
    assert _stored(server) == _hashes(True)
    pruned = run_cli("tools", "index", "--prune", env=env)
    assert pruned.returncode == 0, pruned.stderr
    assert _stored(server) == _hashes(False)
    assert not (tmp_path / "local-index").exists()  # nothing went to the local folder


def test_run_over_http_with_the_default_model(tmp_path: Path, server: str,
                                              small_model_path: Path) -> None:
    """`run` filters its tools through the server's index (16 built-ins > max_tools 6)."""
    result = run_cli("run", "Convert the text 'hello world' to uppercase.", "--json",
                     env=_env(tmp_path, server), timeout=900)
    assert result.returncode == 0, result.stderr
    assert str(json.loads(result.stdout)["answer"]) == "HELLO WORLD", result.stdout
    assert _stored(server) == _hashes(False)  # the run embedded the built-ins there
    assert not (tmp_path / "local-index").exists()


def test_four_clients_write_at_once(tmp_path: Path, server: str) -> None:
    """Four processes sync overlapping function sets to one server, six rounds each."""
    procs = [subprocess.Popen([sys.executable, str(WORKER), server, str(w), str(ROUNDS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO) for w in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (_, err) in zip(procs, outs):
        assert proc.returncode == 0, err[-2000:]
    expected = {s.qualified_name: s.content_hash for w in range(4) for r in plan(w, ROUNDS)
                for s in r}
    assert {k: v for out, _ in outs for k, v in json.loads(out).items()} == expected
    index = ToolIndex(url=server, embedder=HashEmbedder())
    assert index.stored_hashes() == expected  # every function once, none lost
    assert index.count() == len(expected)


class _OtherModel:
    """The real model's name and size but another fingerprint (e.g. other weights)."""

    def __init__(self) -> None:
        inner = MiniLMEmbedder()
        self.inner, self.name, self.dim, self.fingerprint = inner, inner.name, inner.dim, "x1"

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed(texts)


def test_collection_of_another_embedding_model_is_refused(tmp_path: Path, server: str) -> None:
    ToolIndex(url=server, embedder=_OtherModel())  # creates the collection, fingerprint x1
    env = _env(tmp_path, server)
    refused = run_cli("tools", "search", "weather", env=env)
    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "another embedding model" in refused.stderr and "'x1'" in refused.stderr
    assert "localagent tools index --rebuild" in refused.stderr
    rebuilt = run_cli("tools", "index", "--rebuild", env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _stored(server) == _hashes(False)  # rebuilt by our model


def test_unreachable_server_is_one_line_exit_2(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for args in (("tools", "index"), ("tools", "search", "weather")):
        result = run_cli(*args, env=_env(tmp_path, url))
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "cannot reach the Chroma server" in result.stderr and url in result.stderr
        assert "Traceback" not in result.stderr


def test_bad_chroma_url_is_usage_error(tmp_path: Path) -> None:
    result = run_cli("tools", "search", "weather", env=_env(tmp_path, "ftp://example"))
    assert result.returncode == 2
    assert "chroma_url" in result.stderr and "http://" in result.stderr


@pytest.mark.parametrize(("url", "expected"), [
    ("http://127.0.0.1:8123", ("http://127.0.0.1:8123", "127.0.0.1", 8123, False, "")),
    ("http://chroma.lan", ("http://chroma.lan:8000", "chroma.lan", 8000, False, "")),
    ("https://h.example/chroma/", ("https://h.example:443/chroma", "h.example", 443, True,
                                   "/chroma")),
    ("http://[::1]:9000", ("http://[::1]:9000", "::1", 9000, False, "")),
])
def test_server_url_forms(url: str, expected: tuple[object, ...]) -> None:
    server = ChromaServer.parse(url, " tok ")
    assert (server.url, server.host, server.port, server.ssl, server.prefix) == expected
    assert server.headers() == {"Authorization": "Bearer tok"} and "tok" not in repr(server)


@pytest.mark.parametrize("url", ["ftp://h", "h:8000", "http://", "http://h:99999",
                                 "http://u:p@h", "http://h/?q=1"])
def test_bad_server_urls(url: str) -> None:
    with pytest.raises(UsageError, match="LOCALAGENT_CHROMA_URL"):
        ChromaServer.parse(url)


def test_token_for_a_reverse_proxy(tmp_path: Path, server: str) -> None:
    with token_proxy(server, "s3cret", prefix="/chroma") as proxy:
        denied = run_cli("tools", "index", env=_env(tmp_path, proxy))
        assert denied.returncode == 2
        assert "HTTP 401" in denied.stderr and "LOCALAGENT_CHROMA_TOKEN" in denied.stderr
        wrong = run_cli("tools", "index",
                        env=_env(tmp_path, proxy, LOCALAGENT_CHROMA_TOKEN="guess"))
        assert wrong.returncode == 2 and "HTTP 401" in wrong.stderr
        allowed = run_cli("tools", "index",
                          env=_env(tmp_path, proxy, LOCALAGENT_CHROMA_TOKEN="s3cret"))
        assert allowed.returncode == 0, allowed.stderr
        assert "s3cret" not in allowed.stdout + allowed.stderr
    assert _stored(server) == _hashes(False)
