"""`localagent run --quiet` prints only the answer; `--verbose` adds prompts and raw outputs.

Real model (SmolLM2, the fastest catalog model) through the real CLI. Whether it answers
right is not the point here: the shape of the output is.
"""

from __future__ import annotations

from conftest import SMOL_MODEL, run_cli

GOAL = "Convert the text 'hello world' to uppercase."


def test_quiet_prints_only_the_answer() -> None:
    result = run_cli("run", GOAL, "--model", SMOL_MODEL, "--planner", "tree", "--quiet")
    assert result.returncode in (0, 1), result.stderr
    if result.returncode == 0:
        assert result.stdout.count("\n") == 1 and result.stdout.strip()
        assert "LLM calls" not in result.stdout and "answer:" not in result.stdout
    else:
        assert result.stdout == "" and result.stderr.startswith("error: no answer")


def test_verbose_shows_prompts_and_raw_outputs() -> None:
    result = run_cli("run", GOAL, "--model", SMOL_MODEL, "--planner", "tree", "--verbose")
    assert result.returncode in (0, 1), result.stderr
    assert "--- prompt (" in result.stderr and "TextPlugin.uppercase" in result.stderr
    assert "--- output (constrained, " in result.stderr
    assert "LLM calls" in result.stdout


def test_verbose_and_quiet_exclude_each_other() -> None:
    result = run_cli("run", GOAL, "--verbose", "--quiet")
    assert result.returncode == 2
    assert result.stderr == "error: --verbose and --quiet exclude each other\n"
