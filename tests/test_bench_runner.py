"""The run matrix, resuming, the results file and the report, with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localagent.bench.cli import main
from localagent.bench.report import draw_chart, p95, summarize, write_summary
from localagent.bench.results import ResultsFile
from localagent.bench.runner import Benchmark, filter_for, parse_filter_modes, plan_runs
from localagent.bench.suite import Suite, load_suite
from localagent.errors import UsageError
from localagent.llm.scripted import ScriptedLLM, ScriptedRequest
from localagent.planners.techniques import Techniques

PLAIN = Techniques.plain()
DEFAULT = PLAIN.label  # these tests script one plan per run: no re-planning, no narrowing

SUITE_TEXT = """name: tiny
tasks:
  - {id: inv-d, category: single, goal: "What is the invoice of company D?",
     plugins: [DemoPlugin], expect: {number: 6700}}
  - {id: inv-a, category: single, goal: "What is the invoice of company A?",
     plugins: [DemoPlugin], expect: {number: 2000}}
  - {id: many, category: filter, goal: "What is the invoice of company D?",
     plugins: [DemoPlugin], distractors: 5, expect: {number: 6700}}
"""


def _plan(request: ScriptedRequest) -> str:
    """Always GetInvoice(D): right for inv-d, wrong for inv-a."""
    call = {"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}
    return json.dumps({"reasoning": "1. get the invoice", "plan": call})


class Loader:
    def __init__(self) -> None:
        self.models: list[ScriptedLLM] = []

    def __call__(self, name: str) -> ScriptedLLM:
        self.models.append(ScriptedLLM(responder=_plan, name=name))
        return self.models[-1]

    @property
    def calls(self) -> int:
        return sum(len(m.requests) for m in self.models)


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE_TEXT, encoding="utf-8")
    return load_suite(path).select(["inv-d", "inv-a"])


def _specs(suite: Suite, models: tuple[str, ...] = ("m1",)) -> list[Any]:
    return plan_runs(suite, ["tree"], list(models), [True, False], ["auto"], 1, [PLAIN])


def test_plan_runs_every_combination_once(suite: Suite) -> None:
    specs = plan_runs(suite, ["tree", "react"], ["m1", "m2"], [True, False], ["auto", "none"], 2)
    # auto and none are the same run for tasks without many tools: counted once
    assert len(specs) == 2 * 2 * 2 * 2 * 2
    assert len({s.key for s in specs}) == len(specs)
    assert [s.model for s in specs[:16]] == ["m1"] * 16  # model-major
    # the default variant is each planner's own: its key names what the run used
    assert {s.planner: s.techniques.label for s in specs} == {
        "tree": "mentions+values", "react": "grounded"}
    tools = plan_runs(suite, ["tools"], ["m1"], [True], ["auto"], 1)
    assert tools[0].key.endswith("|grounded+decline+fresh+tags+observe")
    sequential = plan_runs(suite, ["sequential"], ["m1"], [True], ["auto"], 1)
    assert sequential[0].key.endswith("|mentions+distinct+typed+backrefs")
    # a catalog model with defaults of its own runs those (models/catalog.toml)
    from localagent.planners.techniques import default_techniques

    small = "qwen2.5-coder-0.5b-instruct"
    own = plan_runs(suite, ["tools"], [small], [True], ["auto"], 1)
    assert own[0].techniques == default_techniques("tools", small) != tools[0].techniques
    with pytest.raises(UsageError, match="unknown planner"):
        plan_runs(suite, ["magic"], ["m1"], [True], ["auto"], 1)
    with pytest.raises(UsageError, match="--repeat"):
        plan_runs(suite, ["tree"], ["m1"], [True], ["auto"], 0)


def test_filter_modes(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE_TEXT, encoding="utf-8")
    few, many = load_suite(path).tasks[0], load_suite(path).tasks[2]
    assert filter_for(few, "auto") == ("none", None)
    label, options = filter_for(many, "auto")
    assert label == "max8" and options is not None and options.max_relevant_functions == 8
    assert filter_for(few, "on")[0] == "max8"
    assert filter_for(few, "threshold:0.3")[0] == "t0.3"
    assert parse_filter_modes("none, max:4") == ["none", "max:4"]
    for bad in ("max:0", "threshold:2", "sometimes", ""):
        with pytest.raises(UsageError):
            parse_filter_modes(bad)


def test_records_judge_and_resume_redoes_nothing(suite: Suite, tmp_path: Path) -> None:
    load = Loader()
    bench = Benchmark(suite, tmp_path / "out", load=load)
    assert bench.run(_specs(suite)) == 4
    assert load.calls == 4 and len(load.models) == 1  # one model load for all runs
    records = {r["key"]: r for r in bench.results.records()}
    ok = records["inv-d|tree|m1|c|none|0|" + DEFAULT]
    assert ok["ok"] and ok["answer"] == 6700 and ok["tool_calls"] == 1
    assert ok["usage"]["calls"] == 1 and ok["outputs"][0]["constrained"] is True
    assert records["inv-d|tree|m1|u|none|0|" + DEFAULT]["outputs"][0]["constrained"] is False
    bad = records["inv-a|tree|m1|c|none|0|" + DEFAULT]
    assert not bad["ok"] and "expected 2000" in bad["reason"]

    again = Benchmark(suite, tmp_path / "out", load=load)
    assert again.run(_specs(suite)) == 0
    assert load.calls == 4 and len(load.models) == 1  # not even loaded again
    assert again.run(_specs(suite, ("m1", "m2"))) == 4  # only the new model's runs
    assert len(ResultsFile(tmp_path / "out").records()) == 8


def test_interrupted_run_continues_where_it_stopped(suite: Suite, tmp_path: Path) -> None:
    load = Loader()
    bench = Benchmark(suite, tmp_path / "out", load=load)

    def stop(spec: Any, record: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bench.run(_specs(suite), on_done=stop)
    assert len(bench.results.records()) == 1
    with bench.results.path.open("a", encoding="utf-8") as fh:
        fh.write('{"key": "inv-a|tree|m1|c|none|0", "ok": tr')  # a line cut by a kill
    assert len(bench.results.records()) == 1
    assert Benchmark(suite, tmp_path / "out", load=load).run(_specs(suite)) == 3
    assert load.calls == 4
    lines = bench.results.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and all(json.loads(line)["key"] for line in lines)


def test_summary_table_and_chart(suite: Suite, tmp_path: Path) -> None:
    bench = Benchmark(suite, tmp_path / "out", load=Loader())
    bench.run(_specs(suite))
    rows = summarize(bench.results.records())
    assert [(r.constrain, r.runs, r.solved) for r in rows] == [(False, 2, 1), (True, 2, 1)]
    assert rows[0].llm_calls == 1.0 and rows[0].success == 0.5
    json_path, csv_path = write_summary(rows, tmp_path / "out")
    assert json.loads(json_path.read_text())[0]["success"] == 0.5
    assert csv_path.read_text().splitlines()[0].startswith("model,planner,constrain")
    pytest.importorskip("matplotlib")
    png = draw_chart(rows, tmp_path / "out" / "chart.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_p95() -> None:
    assert p95([]) == 0.0 and p95([3.0]) == 3.0
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([1.0, 2.0, 10.0]) == 10.0


def test_script_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE_TEXT, encoding="utf-8")
    for argv in (
        ["--planners", "magic"],
        ["--repeat", "0"],
        ["--filter", "max:x"],
        ["--tasks", "nope"],
        ["--no-constrain", "--constrain", "both"],
    ):
        assert main(["--suite", str(path), "--out", str(tmp_path / "o"), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert main(["--suite", str(tmp_path / "none.yaml")]) == 2
    assert not (tmp_path / "o").exists()  # nothing written for bad input


def test_script_report_only(suite: Suite, tmp_path: Path, capsys: Any) -> None:
    Benchmark(suite, tmp_path / "out", load=Loader()).run(_specs(suite))
    code = main(
        ["--suite", str(suite.path), "--out", str(tmp_path / "out"), "--report-only", "--no-chart"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "tiny: 4 runs" in out and "50%" in out
    assert (tmp_path / "out" / "summary.csv").is_file()


def test_script_option_errors_are_one_line(capsys: Any) -> None:
    for argv in (["--constrain", "maybe"], ["--repeat", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: argument") and err.count("\n") == 1


def test_recording_llm_keeps_outputs_and_shows_prompts() -> None:
    from localagent.llm.recording import RecordingLLM, format_exchange

    seen: list[Any] = []
    llm = RecordingLLM(ScriptedLLM(["out1", "out2"]), on_exchange=seen.append)
    llm.complete("prompt one", max_tokens=5)
    llm.complete("prompt two", max_tokens=5)
    kept = llm.take()
    assert [e.output for e in kept] == ["out1", "out2"] and kept[0].prompt is None
    assert llm.take() == [] and seen[1].prompt == "prompt two"
    text = format_exchange(seen[1], prompt_tail=3)
    assert "...two" in text and "out2" in text and "(free, stop)" in text


def test_filtered_task_offers_the_best_tools(tmp_path: Path) -> None:
    """Real MiniLM embeddings and Chroma: 5 distractors + DemoPlugin, filtered to 4."""
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE_TEXT, encoding="utf-8")
    suite = load_suite(path).select(["many"])
    bench = Benchmark(suite, tmp_path / "out", load=Loader(), index_dir=tmp_path / "index")
    specs = plan_runs(suite, ["tree"], ["m1"], [True], ["none", "max:4"], 1, [PLAIN])
    assert bench.run(specs) == 2
    records = {r["filter"]: r for r in bench.results.records()}
    assert records["none"]["tools_offered"] == 8 and records["max4"]["tools_offered"] == 4
    offered = records["max4"]["trace"]["tools"]
    assert "DemoPlugin.GetInvoice" in offered and records["max4"]["ok"]


def test_markdown_summary(suite: Suite, tmp_path: Path) -> None:
    bench = Benchmark(suite, tmp_path / "out", load=Loader())
    bench.run(_specs(suite))
    write_summary(summarize(bench.results.records()), tmp_path / "out")
    lines = (tmp_path / "out" / "summary.md").read_text().splitlines()
    assert len(lines) == 4 and lines[1].count("---") == lines[0].count("|") - 1
    assert f"| m1 | tree ({DEFAULT}) | yes | auto | 2 | 50% (1) |" in lines[3]


def test_table_shows_the_techniques_of_each_row() -> None:
    """Rich reads "[mentions]" as markup and drops it: the label must survive rendering."""
    import io

    from rich.console import Console

    from localagent.bench.report import table

    record = {"model": "m1", "planner": "tree", "constrain": True, "filter": "none",
              "techniques": "mentions+replan=2", "ok": True, "usage": {}, "seconds": 1.0}
    out = io.StringIO()
    Console(file=out, width=250).print(table(summarize([record])))
    assert "tree (mentions+replan=2)" in out.getvalue()
