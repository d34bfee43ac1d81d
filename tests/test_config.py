"""Settings precedence (flag > env > config file > default), bad values, `localagent config`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DEFAULT_ENV, DEFAULT_MODEL, SMOL_MODEL, run_cli

from localagent.config import apply_config_file, config_path, load_settings
from localagent.errors import UsageError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path))
    for var in (
        "LOCALAGENT_MODEL",
        "LOCALAGENT_PLANNER",
        "LOCALAGENT_MAX_ITERATIONS",
        "LOCALAGENT_CONSTRAIN",
        "LOCALAGENT_INDEX_DIR",
        "LOCALAGENT_MODELS_DIR",
        "LOCALAGENT_EXAMPLES",
    ):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_defaults(home: Path) -> None:
    s = load_settings()
    assert s.path == home / "config.toml" == config_path()
    assert s.value("home") == home and s.source("home") == "env LOCALAGENT_HOME"
    assert s.value("model") == DEFAULT_MODEL and s.source("model") == "default"
    assert (s.value("planner"), s.value("max_iterations"), s.value("constrain")) == (
        "tree",
        5,
        True,
    )
    assert s.value("index_dir") == home / "index"
    assert s.value("examples") is False  # the example plugins only when asked for


def test_precedence_flag_env_file_default(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.toml").write_text(
        f'model = "{SMOL_MODEL}"\nplanner = "react"\nmax_iterations = 3\nconstrain = false\n'
    )
    s = load_settings()
    assert (s.value("model"), s.source("model")) == (SMOL_MODEL, f"config {home / 'config.toml'}")
    assert (s.value("planner"), s.value("max_iterations"), s.value("constrain")) == (
        "react",
        3,
        False,
    )
    monkeypatch.setenv("LOCALAGENT_MODEL", "/models/x.gguf")
    monkeypatch.setenv("LOCALAGENT_CONSTRAIN", "yes")
    s = load_settings()
    assert (s.value("model"), s.source("model")) == ("/models/x.gguf", "env LOCALAGENT_MODEL")
    assert s.value("constrain") is True and s.source("planner").startswith("config ")
    s = load_settings({"model": DEFAULT_MODEL, "planner": None})
    assert (s.value("model"), s.source("model")) == (DEFAULT_MODEL, "flag")
    assert s.value("planner") == "react"  # a flag left at None does not count


@pytest.mark.parametrize(
    "text, message",
    [
        ("model = \n", "invalid TOML"),
        ("colour = 'red'\n", "unknown setting"),
        ("home = '/x'\n", "unknown setting"),
        ("planner = 'magic'\n", "planner = 'magic' from config"),
        ("max_iterations = 0\n", "max_iterations"),
        ("max_iterations = 2.5\n", "max_iterations"),
        ("constrain = 'maybe'\n", "constrain"),
    ],
)
def test_bad_config_file(home: Path, text: str, message: str) -> None:
    (home / "config.toml").write_text(text)
    with pytest.raises(UsageError, match=message):
        load_settings()


def test_bad_env_and_flags(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALAGENT_MAX_ITERATIONS", "many")
    with pytest.raises(UsageError, match="from env LOCALAGENT_MAX_ITERATIONS"):
        load_settings()
    monkeypatch.delenv("LOCALAGENT_MAX_ITERATIONS")
    with pytest.raises(UsageError, match="unknown setting"):
        load_settings({"colour": "red"})
    with pytest.raises(UsageError, match="from flag"):
        load_settings({"max_iterations": -1})


def test_apply_config_file_never_overrides_env(home: Path) -> None:
    (home / "config.toml").write_text(f'model = "{SMOL_MODEL}"\nplanner = "tools"\n')
    env = {"LOCALAGENT_HOME": str(home), "LOCALAGENT_PLANNER": "react"}
    assert apply_config_file(env) == ["LOCALAGENT_MODEL"]
    assert env["LOCALAGENT_MODEL"] == SMOL_MODEL and env["LOCALAGENT_PLANNER"] == "react"


def test_cli_config_show_and_path(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(f'model = "{SMOL_MODEL}"\n')
    env = {"LOCALAGENT_HOME": str(tmp_path), "LOCALAGENT_PLANNER": "react", **DEFAULT_ENV}
    shown = run_cli("config", "show", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["model"] == {"value": SMOL_MODEL, "source": f"config {tmp_path / 'config.toml'}"}
    assert data["planner"] == {"value": "react", "source": "env LOCALAGENT_PLANNER"}
    assert data["max_iterations"] == {"value": "5", "source": "default"}
    table = run_cli("config", "show", env=env)
    assert table.returncode == 0 and "config file" in table.stdout
    path = run_cli("config", "path", env=env)
    assert path.returncode == 0 and path.stdout.strip() == str(tmp_path / "config.toml")
    # the file reaches every command: the catalog default shown by `models list` follows it
    listed = run_cli("models", "list", env={"LOCALAGENT_HOME": str(tmp_path), **DEFAULT_ENV})
    starred = [line for line in listed.stdout.splitlines() if "*" in line and "│" in line]
    assert listed.returncode == 0 and SMOL_MODEL[:10] in starred[0]


def test_cli_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("colour = 'red'\n")
    env = {"LOCALAGENT_HOME": str(tmp_path)}
    for args in (("config", "show"), ("models", "list")):
        result = run_cli(*args, env=env)
        assert result.returncode == 2, args
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert "unknown setting(s) colour" in result.stderr and "Traceback" not in result.stderr
    assert run_cli("config", "path", env=env).returncode == 0  # still finds the file


def test_config_show_never_prints_the_api_key() -> None:
    env = {"LOCALAGENT_API_KEY": "sk-very-secret-123"}
    for args in (("config", "show"), ("config", "show", "--json")):
        shown = run_cli(*args, env=env)
        assert shown.returncode == 0, shown.stderr
        assert "sk-very-secret-123" not in shown.stdout and "(set)" in shown.stdout
