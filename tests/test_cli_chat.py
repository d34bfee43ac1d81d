"""`localagent chat`: goals one per line over one loaded model, `/` commands, bad lines
reported without ending the session (scripted model), and a piped session on the real
default model through a fresh interpreter."""

from __future__ import annotations

import json

import pytest
from conftest import DEFAULT_ENV, run_cli
from typer.testing import CliRunner

import localagent.llm
from localagent.cli import app
from localagent.llm import ScriptedLLM

runner = CliRunner()


def _call(function: str, **args: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": function, "arguments": args}) + "\n</tool_call>"


@pytest.fixture
def loads(monkeypatch):
    """Every model load, by name; each gets the same scripted model."""
    llm = ScriptedLLM()
    names: list[str | None] = []

    def load(name=None, *a, **k):
        names.append(name)
        return llm

    monkeypatch.setattr(localagent.llm, "load_llm", load)
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "0")
    return llm, names


def test_two_goals_share_one_model_and_commands_change_the_planner(loads):
    llm, names = loads
    llm.enqueue(json.dumps({"function": "MathPlugin.add", "args": {"value1": 2, "value2": 3}}))
    llm.enqueue(_call("MathPlugin.multiply", value1=7, value2=6), "42")
    stdin = "What is 2 plus 3?\n/planner tools\n\nWhat is 7 times 6?\n/quit\nnot read\n"
    result = runner.invoke(app, ["chat", "--planner", "tree", "--techniques", "plain"],
                           input=stdin)
    assert result.exit_code == 0, result.output
    assert "answer: 5" in result.output and "answer: 42" in result.output
    assert "planner: tools" in result.output
    assert "2 answered, 0 without an answer" in result.output
    assert len(names) == 1  # loaded once for both goals
    assert len(llm.requests) == 3  # "not read", after /quit, was not run


def test_bad_lines_print_one_error_and_the_session_goes_on(loads):
    llm, _ = loads
    llm.enqueue(json.dumps({"function": "MathPlugin.add", "args": {"value1": 1, "value2": 1}}))
    stdin = "/planner nope\n/frobnicate\n/model\n/tools\nWhat is 1 plus 1?\n"
    result = runner.invoke(app, ["chat", "--techniques", "plain"], input=stdin)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "error: /planner takes one of tree, sequential, react, tools, not 'nope'" in out
    assert "error: unknown command '/frobnicate'; /help lists them" in out
    assert "error: /model takes a catalog name or a .gguf path" in out
    assert "MathPlugin.add" in out and "functions:" in out  # /tools
    assert "answer: 2" in out


def test_model_command_loads_the_new_model_before_switching(loads):
    _, names = loads
    result = runner.invoke(app, ["chat"], input="/model other-model\n/help\n")
    assert result.exit_code == 0, result.output
    assert names == ["other-model"]  # the first agent never needed its model
    assert "model: scripted" in result.output
    assert "/planner NAME" in result.output  # /help


def test_bad_option_is_one_line_exit_2():
    result = runner.invoke(app, ["chat", "--planner", "nope"], input="")
    assert result.exit_code == 2
    assert "--planner must be one of" in result.output


def test_real_model_chat_piped(small_model_path):
    """Two goals through one process on the real default model: both answered, one load."""
    stdin = "What is 100 EUR in USD?\n/planner tools\nWhat is 12 times 7?\n"
    proc = run_cli("chat", "--planner", "tools", "--examples", input=stdin, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "answer: 108.0" in proc.stdout, proc.stdout
    assert "answer: 84" in proc.stdout, proc.stdout
    assert "2 answered, 0 without an answer" in proc.stdout


def test_a_goal_is_planned_after_the_earlier_ones_until_new(loads):
    llm, _ = loads
    add = json.dumps({"function": "MathPlugin.add", "args": {"value1": 2, "value2": 3}})
    llm.enqueue(add, add, add)
    stdin = "What is 2 plus 3?\nAnd plus nothing?\n/new\nWhat is 2 plus 3?\n"
    result = runner.invoke(app, ["chat", "--techniques", "plain"], input=stdin)
    assert result.exit_code == 0, result.output
    first, second, third = (r.prompt for r in llm.requests)
    assert "Earlier in this conversation" not in first
    # the second goal comes after the first: its goal, its call with the result, its answer
    assert "Earlier in this conversation:\nGoal: What is 2 plus 3?" in second
    assert "Call: MathPlugin.add(value1=2, value2=3) -> 5" in second
    assert "Now: And plus nothing?" in second
    # after the manual of functions, so the manual's KV cache is reused
    assert second.index("Earlier in this conversation") > second.index("MathPlugin.add")
    assert "new conversation" in result.output
    assert "Earlier in this conversation" not in third  # /new started afresh


TRAVEL = '''
from localagent.tools.decorator import tool

DISTANCES = {frozenset({"Lyon", "Porto"}): 1213.0}


class Travel:
    @tool
    def distance_km(self, origin: str, destination: str) -> float:
        """The road distance between two cities, in kilometres."""
        return DISTANCES.get(frozenset({origin.strip(), destination.strip()}), 0.0)

    @tool
    def km_to_miles(self, km: float) -> float:
        """Convert kilometres to miles."""
        return round(km * 0.621371, 1)
'''


def test_real_model_chat_second_line_refers_to_the_first(default_model_path, tmp_path):
    """The default model and planner: "And in miles?" is answered from the first line's
    distance (1213 km = 753.7 miles)."""
    plugin = tmp_path / "travel.py"
    plugin.write_text(TRAVEL)
    stdin = "How far is Lyon from Porto, in kilometres?\nAnd in miles?\n"
    proc = run_cli("chat", "--plugins", str(plugin), input=stdin, timeout=900, env=DEFAULT_ENV)
    assert proc.returncode == 0, proc.stderr
    assert "answer: 1213.0" in proc.stdout, proc.stdout
    assert "answer: 753.7" in proc.stdout, proc.stdout
