"""Side-effect tools (issue 24, items 1-2): declared, approved, run at most once per distinct
call in a run, never executed speculatively; the CLI's --yes, no-terminal refusal and
--dry-run. Real executor, real registry and a real plugin file that appends to a file;
the scripted model for most, the real default model for one CLI run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import Asked, run_cli
from typer.testing import CliRunner

import localagent.llm
from localagent import tool
from localagent.agent import Agent
from localagent.cli import app
from localagent.cli.approval import cli_approver
from localagent.executor import Executor
from localagent.llm import ScriptedLLM
from localagent.plan import literal_call
from localagent.side_effects import SideEffectLedger, ToolCallRequest, placeholder
from localagent.tools.from_schema import schema_tool
from localagent.tools.registry import ToolRegistry
from localagent.trace import CallFinished, describe

PLUGIN = '''
from pathlib import Path

from localagent import tool

NOTES = Path(__file__).with_name("notes.txt")


class Notes:
    @tool(side_effects=True)
    def Append(self, line: str) -> str:
        """Append one line of text to the notes file."""
        with NOTES.open("a", encoding="utf-8") as f:
            f.write(line + "\\n")
        return "appended: " + line

    @tool
    def Check(self, text: str) -> str:
        """Check a text (always fails: a plan through it must be re-planned)."""
        raise ValueError("the check service is down")

    @tool
    def Shout(self, text: str) -> str:
        """The text in upper case."""
        return text.upper()
'''


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "notes_plugin.py"
    path.write_text(PLUGIN, encoding="utf-8")
    return path


def lines(plugin: Path) -> list[str]:
    notes = plugin.with_name("notes.txt")
    return notes.read_text(encoding="utf-8").splitlines() if notes.exists() else []


def registry_of(plugin: Path) -> ToolRegistry:
    registry = ToolRegistry()
    registry.load(plugin)
    return registry


def compact(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "))


def call(function: str, **args: object) -> dict[str, Any]:
    return {"function": function, "args": args}


def append(line: str) -> dict[str, Any]:
    return call("Notes.Append", line=line)


def finished(events: Any, function: str) -> list[CallFinished]:
    return [e for e in events if isinstance(e, CallFinished) and e.function == function]


# --- declaring ----------------------------------------------------------------------------

def test_side_effects_are_declared_by_the_decorator_and_schema_tools(plugin: Path) -> None:
    registry = registry_of(plugin)
    assert registry.spec("Notes.Append").side_effects
    assert not registry.spec("Notes.Shout").side_effects

    @tool(side_effects=True, name="Send")
    def send(to: str) -> str:
        return to

    spec = registry.spec("Notes.Append")  # the model and the index see the same tool
    assert spec.content_hash == replace(spec, side_effects=False).content_hash
    own = ToolRegistry()
    own.add_function(send, plugin="Mail")
    assert own.spec("Mail.Send").side_effects
    schema = {"name": "bank.transfer", "description": "Move money.",
              "parameters": {"type": "object", "properties": {"amount": {"type": "number"}},
                             "required": ["amount"]}}
    assert schema_tool(schema, lambda amount: amount, side_effects=True).spec.side_effects
    assert not schema_tool(schema, lambda amount: amount).spec.side_effects


# --- the executor and the ledger ----------------------------------------------------------

def test_a_repeated_call_gets_the_recorded_result_across_executors(plugin: Path) -> None:
    registry, asked = registry_of(plugin), Asked(True)
    ledger = SideEffectLedger(asked)
    first = Executor(registry, effects=ledger).run_call_sync(
        literal_call("Notes.Append", {"line": "a"}))
    # another executor of the same run (as a re-plan or another vote sample gets)
    again = Executor(registry, effects=ledger).run_call_sync(
        literal_call("Notes.Append", {"line": "a"}))
    other = Executor(registry, effects=ledger).run_call_sync(
        literal_call("Notes.Append", {"line": "b"}))
    assert lines(plugin) == ["a", "b"]
    assert first.value == again.value == "appended: a" and other.value == "appended: b"
    assert [first.source, again.source, other.source] == ["tool", "recorded", "tool"]
    assert [r.args for r in asked.requests] == [{"line": "a"}, {"line": "b"}]  # asked once each
    replayed = finished(again.events, "Notes.Append")[0]
    assert replayed.from_tool and "reused" in describe(replayed)
    assert [e.outcome for e in ledger.entries] == ["ran", "ran"]


def test_without_approval_nothing_runs_and_the_refusal_is_a_tool_error(plugin: Path) -> None:
    registry, asked = registry_of(plugin), Asked(False)
    executor = Executor(registry, effects=SideEffectLedger(asked))
    plan_call = literal_call("Notes.Shout", {"text": "x"})
    refused = executor.run_call_sync(literal_call("Notes.Append", {"line": "a"}))
    assert not refused.ok and lines(plugin) == []
    event = finished(refused.events, "Notes.Append")[0]
    assert event.error is not None and event.error.kind == "refused" and event.source == "refused"
    assert "refused" in refused.error.message  # type: ignore[union-attr]
    again = executor.run_call_sync(literal_call("Notes.Append", {"line": "a"}))
    assert not again.ok and len(asked.requests) == 1  # a refusal is not asked again
    assert executor.run_call_sync(plan_call).value == "X"  # read-only calls never ask
    # an executor without a ledger has no approver: side-effect calls are refused
    alone = Executor(registry).run_call_sync(literal_call("Notes.Append", {"line": "a"}))
    assert alone.error is not None and "nothing approves it" in alone.error.message
    assert lines(plugin) == []


def test_identical_calls_of_one_turn_run_once(plugin: Path) -> None:
    registry = registry_of(plugin)
    executor = Executor(registry, effects=SideEffectLedger(Asked(True)))
    results = executor.run_calls_sync([literal_call("Notes.Append", {"line": "a"})] * 3)
    assert [r.value for r in results] == ["appended: a"] * 3
    assert sorted(r.source for r in results) == ["recorded", "recorded", "tool"]
    assert lines(plugin) == ["a"]


def test_dry_run_runs_only_read_only_calls(plugin: Path) -> None:
    registry, asked = registry_of(plugin), Asked(True)
    executor = Executor(registry, effects=SideEffectLedger(asked, dry_run=True))
    shout = literal_call("Notes.Shout", {"text": "hi"})
    results = executor.run_calls_sync([literal_call("Notes.Append", {"line": "a"}), shout])
    assert [r.value for r in results] == [placeholder("Notes.Append"), "HI"]
    assert [r.source for r in results] == ["dry_run", "tool"]
    assert lines(plugin) == [] and asked.requests == []
    assert "(dry run)" in describe(finished(results[0].events, "Notes.Append")[0])


# --- plan runner: vote and re-plan (scripted model, Agent) --------------------------------

def test_vote_and_replan_run_each_distinct_side_effect_call_once(plugin: Path) -> None:
    """vote=3 + replan=2: the three sampled plans are compared as plans (none executed);
    the majority plan runs, fails, and is re-planned twice; every plan repeats the same
    Append call, which runs once, and the minority plan's Append("b") never runs."""
    failing = compact(call("Notes.Check", text=append("a")))
    minority = compact(append("b"))
    failing_again = compact(call("Notes.Check", text=call("Notes.Shout", text=append("a"))))
    good = compact(call("Notes.Shout", text=append("a")))
    llm = ScriptedLLM([failing, failing, minority, failing_again, good])
    asked = Asked(True)
    agent = Agent(llm, registry=registry_of(plugin), techniques="vote=3+replan=2",
                  approve=asked)
    events: list[Any] = []
    result = agent.run("note a", planner="tree", on_event=events.append)
    assert result.ok and result.answer == "APPENDED: A", result
    assert lines(plugin) == ["a"]
    assert [r.args for r in asked.requests] == [{"line": "a"}]
    appends = finished(events, "Notes.Append")
    assert [e.source for e in appends] == ["tool", "recorded", "recorded"]
    assert [(a["sample"], a["replan"]) for a in result.attempts] == [(0, 0), (0, 1), (0, 2)]
    assert [r.temperature for r in llm.requests][:3] == [0.0, 0.7, 0.7]  # three samples


def test_a_distinct_call_is_its_function_and_its_validated_arguments() -> None:
    """Key order and the schema's coercion ("3" for an integer) do not make a new call."""
    runs: list[tuple[int, int]] = []
    schema = {"name": "bank.transfer", "description": "Move money.", "parameters": {
        "type": "object", "properties": {"amount": {"type": "integer"},
                                         "to": {"type": "integer"}},
        "required": ["amount", "to"]}}
    registry = ToolRegistry()
    registry.add_tool(schema_tool(schema, lambda amount, to: runs.append((amount, to)) or "ok",
                                  side_effects=True))
    executor = Executor(registry, effects=SideEffectLedger(Asked(True)))
    results = [executor.run_call_sync(literal_call("bank.transfer", args)) for args in
               ({"amount": 3, "to": 1}, {"to": 1, "amount": "3"}, {"amount": 4, "to": 1})]
    assert runs == [(3, 1), (4, 1)]
    assert [r.source for r in results] == ["tool", "recorded", "tool"]
    assert ToolCallRequest("f", {"a": 1, "b": 2}).key == ToolCallRequest("f", {"b": 2, "a": 1}).key


def test_without_side_effects_vote_still_executes_and_compares_values(plugin: Path) -> None:
    """The read-only case keeps voting on executed values."""
    registry = ToolRegistry()
    registry.load(plugin)
    shout = {"name": "Echo.Say", "description": "Say it.", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
    pure = ToolRegistry()
    pure.add_tool(schema_tool(shout, lambda text: text))
    plans = [compact(call("Echo.Say", text=t)) for t in ("x", "y", "y")]
    result = Agent(ScriptedLLM(plans), registry=pure, techniques="vote=3").run(
        "say", planner="tree")
    assert result.answer == "y" and len(result.attempts) == 3  # all three executed


def test_react_repeats_get_the_recorded_result(plugin: Path) -> None:
    """With Append the only function, a repeated step cannot be rewritten without it: the
    repeat reaches the executor, which returns the recorded result instead of appending."""
    only = ToolRegistry()
    only.add_tool(registry_of(plugin).get("Notes.Append"))
    step = 'Thought: note it\nAction: Notes.Append\nAction Input: {"line": "a"}'
    llm = ScriptedLLM([step, step, "Thought: done\nFinal Answer: appended: a"])
    agent = Agent(llm, registry=only, approve=Asked(True), techniques="plain")
    result = agent.run("note a", planner="react", max_iterations=3)
    assert lines(plugin) == ["a"]
    assert [t.get("source") for t in result.steps if t.get("function")] == ["tool", "recorded"]


def test_react_repeat_with_other_functions_is_rewritten_not_run(plugin: Path) -> None:
    """With other functions offered, the repeated step is written again without Append."""
    step = 'Thought: note it\nAction: Notes.Append\nAction Input: {"line": "a"}'
    llm = ScriptedLLM([step, step, "Thought: done\nFinal Answer: appended: a"])
    agent = Agent(llm, registry=registry_of(plugin), approve=Asked(True), techniques="plain")
    result = agent.run("note a", planner="react", max_iterations=3)
    assert lines(plugin) == ["a"]
    assert [t.get("source") for t in result.steps if t.get("function")] == ["tool"]
    assert "Notes.Append" in llm.requests[1].constraint.source
    assert "Notes.Append" not in llm.requests[2].constraint.source
    assert result.answer == "appended: a"


# --- the CLI ------------------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    llm = ScriptedLLM()
    monkeypatch.setattr(localagent.llm, "load_llm", lambda *a, **k: llm)
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "0")
    return llm


def test_cli_without_a_terminal_or_yes_refuses_and_says_why(scripted, plugin: Path) -> None:
    """vote=3 + replan=2: three plans, the chosen one refused, re-planned twice into the same
    call: nothing written, and the refusal said once (a refused call is not asked again)."""
    scripted.enqueue(*[compact(call("Notes.Shout", text=append("a")))] * 5)
    out = runner.invoke(app, ["run", "note a", "--plugins", str(plugin), "--planner", "tree",
                              "--techniques", "vote=3+replan=2"])
    assert out.exit_code == 1, out.output
    assert lines(plugin) == []
    text = " ".join(out.output.split())
    assert text.count('refused: Notes.Append(line="a") has side effects; no terminal to ask '
                      "for approval and no --yes") == 1, text
    assert len(scripted.requests) == 5  # 3 samples and 2 re-plans


def test_cli_yes_runs_exactly_the_planned_calls(scripted, plugin: Path) -> None:
    plan = call("Notes.Shout", text=call("Notes.Append", line=call(
        "Notes.Shout", text=append("a"))))
    scripted.enqueue(compact(plan), compact(append("b")), compact(plan))  # vote: 2 to 1
    out = runner.invoke(app, ["run", "note a", "--plugins", str(plugin), "--planner", "tree",
                              "--techniques", "vote=3+replan=2", "--yes", "--json"])
    assert out.exit_code == 0, out.output
    assert lines(plugin) == ["a", "APPENDED: A"]
    assert json.loads(out.output)["answer"] == "APPENDED: APPENDED: A"


def test_cli_dry_run_shows_the_calls_and_runs_none_with_side_effects(scripted,
                                                                      plugin: Path) -> None:
    scripted.enqueue(compact(call("Notes.Shout", text=append("a"))))
    out = runner.invoke(app, ["run", "note a", "--plugins", str(plugin), "--planner", "tree",
                              "--techniques", "plain", "--dry-run"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # rich wraps long lines
    assert lines(plugin) == []
    assert '< #2 Notes.Append = "<dry run: Notes.Append was not executed>" (dry run)' in text
    assert "dry run: calls with side effects were not executed" in text


def test_terminal_approver_asks_yes_or_no() -> None:
    import io

    request = ToolCallRequest("Notes.Append", {"line": "a"})
    assert cli_approver(False, interactive=True, stream=io.StringIO("y\n"))(request)
    assert not cli_approver(False, interactive=True, stream=io.StringIO("n\n"))(request)
    assert cli_approver(True, interactive=False)(request)
    assert not cli_approver(False, interactive=False)(request)


def _planned_lines(node: Any) -> list[str]:
    """The `line` of every Notes.Append call in a plan dict, in evaluation order."""
    if isinstance(node, dict) and "function" in node:
        inner = [x for v in node.get("args", {}).values() for x in _planned_lines(v)]
        here = [node["args"]["line"]] if node["function"] == "Notes.Append" else []
        return inner + here
    if isinstance(node, dict):
        return [x for v in node.values() for x in _planned_lines(v)]
    if isinstance(node, list):
        return [x for v in node for x in _planned_lines(v)]
    return []


def test_real_model_vote_and_replan_with_yes_write_exactly_the_planned_lines(
        small_model_path: Path, plugin: Path) -> None:
    """The default model through the CLI, vote=3 and replan=2: the file gets exactly the
    lines of the chosen plan's Append calls, each at most once."""
    args = ["run", "Append the line 'buy milk' to my notes.", "--plugins", str(plugin),
            "--planner", "tree", "--techniques", "+vote=3,+replan=2", "--yes", "--json",
            "--max-tools", "0", "--exclude", "Notes.Check", "--exclude", "Notes.Shout"]
    for builtin in ("TextPlugin", "MathPlugin", "TimePlugin"):
        args += ["--exclude-plugin", builtin]
    proc = run_cli(*args, env={"LOCALAGENT_THREADS": "1"}, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    planned = [x for attempt in data["attempts"] for x in _planned_lines(attempt["plan"])]
    written = lines(plugin)
    assert written, data  # the model planned at least one Append, and it ran
    assert written == list(dict.fromkeys(planned)), (written, planned)
    assert len(written) == len(set(written))


def test_a_failed_side_effect_call_is_not_retried(plugin: Path) -> None:
    """It may have done part of its work before it raised: a repeat gets the same error."""
    runs: list[str] = []

    def flaky(to: str) -> str:
        runs.append(to)
        raise ConnectionError("the mail server hung up after sending")

    schema = {"name": "mail.send", "description": "Send a mail.", "parameters": {
        "type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}
    registry = ToolRegistry()
    registry.add_tool(schema_tool(schema, flaky, side_effects=True))
    ledger = SideEffectLedger(Asked(True))
    first, again = (Executor(registry, effects=ledger).run_call_sync(
        literal_call("mail.send", {"to": "ann"})) for _ in range(2))
    assert runs == ["ann"]
    assert first.error is not None and again.error is not None
    assert "hung up" in again.error.message and again.source == "recorded"


def test_piped_chat_refuses_without_yes_and_runs_with_it(scripted, plugin: Path) -> None:
    plan = compact(append("a"))
    scripted.enqueue(plan)
    out = runner.invoke(app, ["chat", "--plugins", str(plugin), "--planner", "tree",
                              "--techniques", "plain"], input="note a\n")
    assert lines(plugin) == [] and "no --yes" in out.output
    scripted.enqueue(plan)
    out = runner.invoke(app, ["chat", "--plugins", str(plugin), "--planner", "tree",
                              "--techniques", "plain", "--yes"], input="note a\n")
    assert lines(plugin) == ["a"] and "1 answered" in out.output, out.output


def test_exec_asks_like_run(plugin: Path, tmp_path: Path) -> None:
    """A saved plan replayed with `exec`: refused without a terminal or --yes, run once
    with --yes, placeholder only with --dry-run."""
    saved = tmp_path / "plan.json"
    saved.write_text(compact(call("Notes.Shout", text=append("a"))), encoding="utf-8")
    args = ["exec", str(saved), "--plugins", str(plugin)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1 and lines(plugin) == []
    assert "no terminal to ask for approval and no --yes" in " ".join(refused.output.split())
    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0 and lines(plugin) == []
    approved = runner.invoke(app, [*args, "--yes"])
    assert approved.exit_code == 0, approved.output
    assert lines(plugin) == ["a"] and "APPENDED: A" in approved.output
