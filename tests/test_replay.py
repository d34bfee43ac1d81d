"""Replayable model calls (llm/replay.py) and the profile's use of them, on a scripted model
that counts its generations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from localagent.bench.cli import main
from localagent.bench.profile import parse_shard, shard_of
from localagent.bench.runner import Benchmark, plan_runs
from localagent.bench.suite import load_suite
from localagent.constraint import Constraint
from localagent.errors import UsageError
from localagent.llm.replay import ReplayLLM, ReplayStore
from localagent.llm.scripted import ScriptedLLM, ScriptedRequest
from localagent.planners.techniques import Techniques, parse_spec

SUITE = """name: tiny
tasks:
  - {id: inv-d, category: single, goal: "What is the invoice of company D?",
     plugins: [DemoPlugin], expect: {number: 6700}}
  - {id: inv-a, category: single, goal: "What is the invoice of company A?",
     plugins: [DemoPlugin], expect: {number: 2000}}
"""


def _respond(request: ScriptedRequest) -> str:
    """A tree plan for a plan prompt, a tool call or an answer for a chat turn."""
    if _is_chat(request):
        if "6700" in request.prompt:  # the call's result is in the conversation
            return "6700"
        return ('<tool_call>\n{"name": "DemoPlugin.GetInvoice", "arguments": '
                '{"company": "D"}}\n</tool_call>')
    call = {"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}
    return json.dumps({"reasoning": "1. get the invoice", "plan": call})


def test_a_stored_call_is_replayed_and_a_changed_one_generated(tmp_path: Path) -> None:
    inner = ScriptedLLM(responder=lambda r: f"out:{r.prompt}:{r.max_tokens}")
    store = ReplayStore(tmp_path / "r.sqlite")
    llm = ReplayLLM(inner, store)
    grammar = Constraint(kind="regex", source="[a-z]+")
    first = llm.complete("p", max_tokens=5, constraint=grammar)
    assert llm.complete("p", max_tokens=5, constraint=grammar).text == first.text
    assert len(inner.requests) == 1 and llm.stats.replayed == 1
    llm.complete("p", max_tokens=6, constraint=grammar)  # another budget
    llm.complete("p", max_tokens=5, constraint=Constraint(kind="regex", source="[a-z]"))
    llm.complete("p", max_tokens=5, temperature=0.7, seed=1)  # sampled: keyed on the seed
    llm.complete("p", max_tokens=5, temperature=0.7, seed=2)
    assert len(inner.requests) == 5
    llm.complete("p", max_tokens=5, temperature=0.7, seed=1)
    assert len(inner.requests) == 5
    # a new process (a new store object on the same file) replays too; --no-replay does not
    again = ScriptedLLM(responder=lambda r: "other")
    assert ReplayLLM(again, ReplayStore(tmp_path / "r.sqlite")).complete(
        "p", max_tokens=5, constraint=grammar).text == first.text
    assert not again.requests
    fresh = ReplayLLM(again, ReplayStore(tmp_path / "r.sqlite"), read=False)
    assert fresh.complete("p", max_tokens=5, constraint=grammar).text == "other"
    assert fresh.stats.generated == 1


def test_a_change_to_one_planner_regenerates_only_its_calls(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE, encoding="utf-8")
    suite = load_suite(path)
    store = ReplayStore(tmp_path / "replay.sqlite")
    model = ScriptedLLM(responder=_respond, name="m")

    def run(tree: str, out: str) -> list[ScriptedRequest]:
        specs = [*plan_runs(suite, ["tree"], ["m"], [True], ["none"], 1, [parse_spec(tree)]),
                 *plan_runs(suite, ["tools"], ["m"], [True], ["none"], 1, [Techniques.plain()])]
        before = len(model.requests)
        records = Benchmark(suite, tmp_path / out, load=lambda _: ReplayLLM(model, store))
        records.run(specs)
        return model.requests[before:]

    first = run("plain", "a")
    assert {_is_chat(r) for r in first} == {True, False}  # both planners generated
    assert run("plain", "b") == []  # the same code again: every call replayed
    changed = run("reasoning", "c")  # the tree planner's prompt and grammar change
    assert changed and not any(_is_chat(r) for r in changed)  # the tools calls replayed
    assert len(changed) == sum(not _is_chat(r) for r in first)


def _is_chat(request: ScriptedRequest) -> bool:
    return "<tools>" in request.prompt


def test_shards_cover_every_run_once() -> None:
    items = list(range(10))
    parts = [shard_of(items, i, 3) for i in (1, 2, 3)]
    assert [x for p in parts for x in p] == items and {len(p) for p in parts} <= {3, 4}
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_a_bad_shard_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--profile", "quick", "--shard", "3/2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --shard 3/2") and len(err.strip().splitlines()) == 1


def test_a_profile_rerun_with_no_change_replays_every_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A small profile (the core suite's first task, the seed scenarios with one seed) run
    twice: the second run generates nothing and says so; the first run's results move to
    previous/."""
    from localagent.bench import cli, profile

    monkeypatch.setitem(profile.PROFILES, "quick", (
        profile.Part("core", "core", 1, ("tree", "tools")),
        profile.Part("scenarios", "scenarios", 1)))
    models: list[ScriptedLLM] = []

    def load(name: str) -> ScriptedLLM:
        models.append(ScriptedLLM(responder=_respond, name=name))
        return models[-1]

    monkeypatch.setattr(cli, "_default_load", load)
    args = ["--profile", "quick", "--out", str(tmp_path), "--models", "m", "--no-chart"]
    assert main(args) == 0
    first = sum(len(m.requests) for m in models)
    made = re.search(r"model calls: (\d+) of (\d+) replayed, (\d+) generated",
                     capsys.readouterr().out)
    assert made and int(made[3]) == first > 0  # a call made twice in one run is replayed
    assert main(args) == 0
    out = capsys.readouterr().out
    assert sum(len(m.requests) for m in models) == first  # nothing generated again
    assert f"model calls: {made[2]} of {made[2]} replayed, 0 generated" in out
    assert (tmp_path / "previous" / "core" / "runs.jsonl").is_file()
    assert "seed scenarios" in out and "core" in out
