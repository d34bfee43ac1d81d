"""`localagent exec plan.json`: runs a saved plan; bad plans exit 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from localagent.cli import app

PLAN = {
    "function": "DemoPlugin.Diff",
    "args": {
        "value1": {"function": "DemoPlugin.Total", "args": {
            "value1": {"function": "DemoPlugin.GetInvoice", "args": {"company": "C"}},
            "value2": {"function": "DemoPlugin.GetInvoice", "args": {"company": "F"}}}},
        "value2": {"function": "DemoPlugin.Total", "args": {
            "value1": {"function": "DemoPlugin.GetInvoice", "args": {"company": "A"}},
            "value2": {"function": "DemoPlugin.GetInvoice", "args": {"company": "E"}}}},
    },
}

PLUGIN = '''
from localagent.tools.decorator import tool


class Shouter:
    @tool
    def shout(self, input: str) -> str:
        """Shout the text."""
        return input.upper() + "!"

    @tool
    def fail(self) -> str:
        """Always raises."""
        raise RuntimeError("broken on purpose")
'''


def write(tmp_path: Path, data: Any, name: str = "plan.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_exec_prints_trace_and_answer(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["exec", str(write(tmp_path, PLAN)), "--examples"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "answer: 21100"
    assert any("DemoPlugin.Diff" in line and "= 21100" in line for line in lines)
    assert sum("DemoPlugin.GetInvoice" in line for line in lines) == 8  # 4 starts, 4 ends


def test_exec_json_is_one_object(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["exec", str(write(tmp_path, PLAN)), "--json", "--examples"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["answer"] == 21100 and payload["ok"] is True
    assert payload["plan"]["kind"] == "tree" and payload["calls"] == 7
    kinds = {e["kind"] for e in payload["events"]}
    assert {"call_started", "call_finished", "run_finished"} <= kinds


def test_exec_with_a_plugin_file_and_sequential_plan(tmp_path: Path) -> None:
    plugin = write(tmp_path, PLUGIN, "shouter.py")
    plan = {"input": "hi", "subtasks": [{"function": "Shouter.shout"},
                                        {"function": "TextPlugin.lowercase"}]}
    result = CliRunner().invoke(
        app, ["exec", str(write(tmp_path, plan)), "--plugins", str(plugin)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == "answer: hi!"


def test_bad_plan_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = {"function": "DemoPlugin.Diff", "args": {
        "value1": {"function": "DemoPlugin.Totl", "args": {"value1": 1, "value2": 2}},
        "value2": "abc"}}
    result = CliRunner().invoke(app, ["exec", str(write(tmp_path, bad)), "--examples"])
    assert result.exit_code == 2
    assert result.stdout == ""
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert 'root.args.value1: unknown function "DemoPlugin.Totl"; did you mean DemoPlugin.Total?' \
        in err
    assert "root.args.value2: expected a number, got a string ('abc')" in err


def test_example_plugins_only_with_examples(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["exec", str(write(tmp_path, PLAN))])
    assert result.exit_code == 2 and result.stdout == ""
    assert 'root: unknown function "DemoPlugin.Diff"' in result.stderr


def test_missing_file_and_broken_json_exit_2(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["exec", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "nope.json" in missing.stderr
    broken = CliRunner().invoke(app, ["exec", str(write(tmp_path, "{not json"))])
    assert broken.exit_code == 2 and "not valid JSON" in broken.stderr


def test_failing_tool_exits_1_cleanly(tmp_path: Path) -> None:
    plugin = write(tmp_path, PLUGIN, "shouter2.py")
    plan = {"function": "Shouter.shout", "args": {"input": {"function": "Shouter.fail"}}}
    result = CliRunner().invoke(
        app, ["exec", str(write(tmp_path, plan)), "--plugins", str(plugin), "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["ok"] is False and "broken on purpose" in payload["error"]["message"]
