"""Shared fixtures: real models loaded once per session, and an isolated LOCALAGENT_HOME.

Real-model fixtures are session-scoped because loading costs ~0.5 s and the KV cache is
per model: a test that depends on an empty cache must call `llm.reset_cache()` itself.
Model files are assembled (once, verified) into the shared models directory.

Which model a test runs on: `default_llm` is the catalog's default (Qwen2.5-Coder-1.5B),
for tests of what a user gets (answers, the README's commands); `small_llm` is the 0.5B of
the same family, for tests of mechanics that any model shows (grammars, caches, executor,
loops, errors), about 3x faster, so CI stays under 30 minutes on 2 cores. CLI tests run in
a subprocess on the small model too (`LOCALAGENT_MODEL`, set for the session) unless they
ask for the default with `run_cli(..., env=DEFAULT_ENV)`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests (tests/test_fuzz_*.py): "ci" (the default) is bounded and deterministic, so
# CI time stays fixed; HYPOTHESIS_PROFILE=fuzz explores much longer with fresh examples.
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, database=None)
settings.register_profile("fuzz", max_examples=2000, deadline=None, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"  # the catalog's default
SMALL_MODEL = "qwen2.5-coder-0.5b-instruct"  # the default's draft: the fast, small choice
DEFAULT_ENV: dict[str, str | None] = {"LOCALAGENT_MODEL": None}  # run_cli on the default
SMOL_MODEL = "smollm2-135m-instruct"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Tests never touch the user's ~/.localagent (the models dir is shared on purpose)."""
    home = tmp_path_factory.mktemp("localagent-home")
    saved = {k: os.environ.get(k) for k in ("LOCALAGENT_HOME", "LOCALAGENT_CATALOG",
                                            "LOCALAGENT_MODEL")}
    os.environ["LOCALAGENT_HOME"] = str(home)
    os.environ.pop("LOCALAGENT_CATALOG", None)
    os.environ["LOCALAGENT_MODEL"] = SMALL_MODEL
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def default_llm():  # -> LlamaCppLLM
    """The real default model (Qwen2.5-Coder-1.5B-Instruct), greedy, loaded once."""
    from localagent.llm import load_llm

    llm = load_llm(DEFAULT_MODEL)
    yield llm
    llm.close()


@pytest.fixture(scope="session")
def small_llm():  # -> LlamaCppLLM
    """The small model (Qwen2.5-Coder-0.5B-Instruct), greedy, loaded once: mechanics tests."""
    from localagent.llm import load_llm

    llm = load_llm(SMALL_MODEL)
    yield llm
    llm.close()


@pytest.fixture(scope="session")
def smol_llm():  # -> LlamaCppLLM
    """SmolLM2-135M-Instruct (extra `smollm2`, part of `dev`), greedy, loaded once."""
    from localagent.llm import load_llm

    llm = load_llm(SMOL_MODEL)
    yield llm
    llm.close()


@pytest.fixture(scope="session")
def default_model_path() -> Path:
    """The assembled, verified GGUF of the default model."""
    from localagent.llm import ensure_model, load_catalog

    return ensure_model(load_catalog().get(DEFAULT_MODEL))


@pytest.fixture(scope="session")
def small_model_path() -> Path:
    """The assembled, verified GGUF of the small model."""
    from localagent.llm import ensure_model, load_catalog

    return ensure_model(load_catalog().get(SMALL_MODEL))


def run_cli(*args: str, env: dict[str, str | None] | None = None,
            prefix: tuple[str, ...] = (), timeout: float = 300,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `localagent ARGS` in a fresh interpreter, as a user would (real exit codes,
    real stderr); `input` is piped to its stdin; an `env` value None unsets that variable."""
    merged = {**os.environ, **(env or {})}
    full_env = {k: v for k, v in merged.items() if v is not None}
    script = Path(sys.executable).parent / "localagent"
    entry = [str(script)] if script.is_file() else [
        sys.executable, "-c", "from localagent.cli import app; app(prog_name='localagent')"]
    cmd = [*prefix, *entry, *args]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=full_env, cwd=REPO,
                          timeout=timeout, input=input)


def stop_process(proc: subprocess.Popen, timeout: float = 15) -> None:
    """Terminate a server process the test started; kill it if it does not exit in time."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Asked:
    """An approver of side-effect calls that records what it was asked and answers `answer`."""

    def __init__(self, answer: bool) -> None:
        self.answer, self.requests = answer, []

    def __call__(self, request) -> bool:  # a localagent.side_effects.ToolCallRequest
        self.requests.append(request)
        return self.answer


@pytest.fixture
def scripted(monkeypatch):  # -> ScriptedLLM; test_mcp and test_side_effects have their own
    """A scripted model; every function offered (the scripted plans name them freely;
    the tests that plan with DemoPlugin pass --examples). The filter's goal translation is
    off, so that every scripted output is a plan (on: `test_run_asks_for_the_translation_
    first_when_the_filter_ranks`)."""
    import localagent.llm
    from localagent.llm import ScriptedLLM

    llm = ScriptedLLM()
    monkeypatch.setattr(localagent.llm, "load_llm", lambda *a, **k: llm)
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "0")
    monkeypatch.setenv("LOCALAGENT_TRANSLATE_GOALS", "0")
    return llm
