"""`localagent run` / `localagent plan`: exit codes, --json shape, bad input (scripted model),
and one run on the real default model through a fresh interpreter."""

from __future__ import annotations

import json

import pytest
from conftest import SMALL_MODEL, run_cli
from typer.testing import CliRunner

import localagent.llm
from localagent.bench.scenarios import INVOICE
from localagent.cli import app
from localagent.llm import ScriptedLLM
from localagent.plan import plan_from_json

PLAN = {"reasoning": "r", "plan": {"function": "DemoPlugin.Diff", "args": {
    "value1": {"function": "DemoPlugin.GetInvoice", "args": {"company": "C"}}, "value2": 100}}}

runner = CliRunner()


def test_run_asks_for_the_translation_first_when_the_filter_ranks(scripted, monkeypatch):
    """Setting `translate_goals` (on by default): a filtered run first asks the model for the
    goal in English, searches with it too and shows it under the goal in the plan prompt.
    Off, or with nothing to rank, the model is asked only for the plan."""
    monkeypatch.setenv("LOCALAGENT_TRANSLATE_GOALS", "1")
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "4")
    goal = "Wie hoch ist die Rechnung der Firma D?"
    scripted.enqueue("What is the invoice amount of company D?",
                     json.dumps({"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}))
    result = runner.invoke(app, ["run", goal, "--json", "--techniques", "plain", "--examples"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"] == 6700
    first, plan = scripted.requests
    assert first.prompt.rstrip().endswith(f"{goal}<|im_end|>\n<|im_start|>assistant")
    assert f"Goal: {goal}\nIn English: What is the invoice amount of company D?\nPlan:" \
        in plan.prompt
    scripted.enqueue("What is the invoice amount of company D?",
                     json.dumps({"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}))
    shown = runner.invoke(app, ["run", goal, "--show-tools", "--techniques", "plain",
                                "--examples"])
    assert shown.exit_code == 0, shown.output
    assert "searched also as: What is the invoice amount of company D?" in shown.output
    assert len(scripted.requests) == 4  # asked once per run, --show-tools included
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "0")  # every function: nothing to rank
    scripted.enqueue(json.dumps({"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}))
    result = runner.invoke(app, ["run", goal, "--json", "--techniques", "plain", "--examples"])
    assert result.exit_code == 0, result.output
    assert len(scripted.requests) == 5


def test_run_filters_to_the_configured_number_of_functions(scripted, monkeypatch):
    """Without filter flags, the configured max_tools (real MiniLM + Chroma) picks the
    functions, plus the arithmetic built-ins; the scripted plan uses one of them."""
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "4")
    scripted.enqueue(json.dumps({"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}))
    result = runner.invoke(app, ["run", "What is the invoice amount of company D?", "--json",
                                 "--techniques", "plain", "--examples"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    arithmetic = {"MathPlugin.add", "MathPlugin.subtract", "MathPlugin.multiply",
                  "MathPlugin.divide"}
    ranked = [t for t in data["tools"] if t not in arithmetic]
    assert arithmetic <= set(data["tools"])  # always offered when the default filter runs
    assert 4 <= len(data["tools"]) <= 8 and len(ranked) <= 4
    assert "DemoPlugin.GetInvoice" in data["tools"]
    assert data["answer"] == 6700


@pytest.mark.parametrize("whole", ["1", "0"])
def test_whole_plugins_setting_decides_whether_two_goals_share_their_offer(
        scripted, monkeypatch, whole):
    """Config `whole_plugins` (off by default): on, two invoice goals that keep different
    currency functions get one offer; off, Semantic Kernel's count, they differ."""
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "6")
    monkeypatch.setenv("LOCALAGENT_WHOLE_PLUGINS", whole)
    offers = []
    for goal, company in (("What is the total of the invoices of A and C?", "A"),
                          ("What is the invoice of B minus the invoice of D?", "B")):
        scripted.enqueue(json.dumps({"function": "DemoPlugin.GetInvoice",
                                     "args": {"company": company}}))
        result = runner.invoke(app, ["run", goal, "--json", "--techniques", "plain",
                                     "--examples"])
        assert result.exit_code == 0, result.output
        offers.append(set(json.loads(result.output)["tools"]))
    assert (offers[0] == offers[1]) == (whole == "1"), offers


def _commands(group, prefix=()):
    """Every command and group of the CLI (click objects), with its argument list
    (`["tools", "index"]`)."""
    import typer.main

    click_group = typer.main.get_command(group) if not prefix else group
    yield list(prefix), click_group
    for name, command in getattr(click_group, "commands", {}).items():
        yield from _commands(command, (*prefix, name))


def test_every_command_help_has_an_example():
    paths = [path for path, _ in _commands(app)]
    assert ["tools", "index"] in paths and ["run"] in paths and len(paths) > 12
    missing = [p for p in paths
               if "Example" not in runner.invoke(app, [*p, "--help"]).output]
    assert not missing, missing


def test_every_option_and_argument_has_help_text():
    undocumented = [f"{' '.join(path)} {p.name}" for path, command in _commands(app)
                    for p in command.params if not getattr(p, "help", None)]
    assert not undocumented, undocumented


def test_techniques_help_lists_every_switch():
    """The help texts are written out (importing the planners would slow every command
    down by most of a second), so this test keeps them complete."""
    from dataclasses import fields

    from localagent.bench.cli import parser
    from localagent.cli.run import TECHNIQUES_OPT
    from localagent.planners.techniques import Techniques

    bench = next(a.help for a in parser()._actions if a.dest == "techniques")
    for f in fields(Techniques):
        assert f.name in TECHNIQUES_OPT.help and f.name in bench, f.name


def test_run_json_answer(scripted):
    scripted.enqueue(json.dumps(PLAN))
    result = runner.invoke(app, ["run", "C minus 100", "--json", "--examples"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["answer"] == 19900 and data["planner"] == "tree"
    assert {"model", "plan", "steps", "usage", "seconds"} <= set(data)


def test_run_live_view_shows_calls(scripted):
    scripted.enqueue(json.dumps(PLAN))
    result = runner.invoke(app, ["run", "C minus 100", "--examples"])
    assert result.exit_code == 0
    assert "DemoPlugin.GetInvoice" in result.output and "answer: 19900" in result.output


def test_run_without_answer_exits_1(scripted):
    scripted.enqueue("x", "y", "z")
    result = runner.invoke(app, ["run", "C minus 100"])
    assert result.exit_code == 1
    assert "no valid output after 3 attempts" in result.output


def test_plan_prints_a_loadable_plan(scripted):
    scripted.enqueue(json.dumps(PLAN))
    result = runner.invoke(app, ["plan", "C minus 100", "--examples"])
    assert result.exit_code == 0
    assert plan_from_json(result.output).root.function == "DemoPlugin.Diff"


def test_plan_show_tools_goes_to_stderr_and_the_plan_stays_json(scripted):
    scripted.enqueue(json.dumps(PLAN))
    result = runner.invoke(app, ["plan", "C minus 100", "--show-tools", "--examples",
                                 "--exclude-plugin", "TimePlugin"])
    assert result.exit_code == 0, result.output
    assert plan_from_json(result.stdout).root.function == "DemoPlugin.Diff"
    assert "DemoPlugin.Diff" in result.stderr and "TimePlugin" not in result.stderr


@pytest.mark.parametrize("args", [
    ["run", "   "],
    ["run", "g", "--planner", "nope"],
    ["run", "g", "--max-iterations", "0"],
    ["run", "g", "--threshold", "2"],
    ["run", "g", "--exclude-plugin", "NoSuchPlugin", "--max-tools", "3"],
    ["plan", "g", "--planner", "react"],
    ["run", "g", "--plugins", "/nonexistent/plugin.py"],
    ["run", "g", "--techniques", "+nope"],
    ["run", "g", "--techniques", "+similar grounded"],
    ["run", "g", "--planner", "tree", "--techniques", "-decline"],
    ["plan", "g", "--techniques", "+replan"],
])
def test_bad_input_exits_2_with_one_line(scripted, args):
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_techniques_changes_apply_to_the_planners_default(scripted):
    """`--techniques +X,-Y` is the planner's own default with the changes; a change the
    default cannot take is one line, exit 2, before any planning."""
    scripted.enqueue(json.dumps(PLAN))
    result = runner.invoke(app, ["run", "C minus 100", "--json", "--examples",
                                 "--techniques", "+replan=2,-mentions"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["techniques"] == "values+replan=2"  # tree: mentions+values
    result = runner.invoke(app, ["run", "C minus 100", "--planner", "tools",
                                 "--techniques", "-mentions"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == ("error: cannot remove technique mentions: it is not on "
                                     "in the tools planner's default (grounded+decline+fresh+tags+observe)")
    assert not scripted.requests[1:]  # the second run never asked the model


class _Offered(Exception):
    """Raised by a stand-in for Agent.run, carrying the functions the agent was given."""


def _offered(monkeypatch, *args: str) -> list[str]:
    """The functions `localagent ARGS` hands the agent (no model, no index)."""
    import localagent.agent

    def run(self, goal, **kwargs):
        raise _Offered(self.registry.names())

    monkeypatch.setattr(localagent.agent.Agent, "run", run)
    result = runner.invoke(app, list(args))
    assert isinstance(result.exception, _Offered), result.output
    return result.exception.args[0]


EXAMPLE_NAMES = ("DemoPlugin", "PersonalAssistant", "WeatherPlugin", "CurrencyPlugin")


def test_run_offers_no_example_plugin_unless_asked(scripted, monkeypatch, tmp_path):
    """A user's weather question is never answered from the demo data by default; the
    example plugins come with --examples, LOCALAGENT_EXAMPLES or `examples = true`."""
    weather = ["run", "What is the weather in Paris?"]
    names = _offered(monkeypatch, *weather)
    assert "MathPlugin.add" in names and "TextPlugin.uppercase" in names
    assert not [n for n in names if n.startswith(EXAMPLE_NAMES)], names
    names = _offered(monkeypatch, *weather, "--examples")
    assert {"WeatherPlugin.GetWeather", "DemoPlugin.GetInvoice", "CurrencyPlugin.ConvertCurrency",
            "PersonalAssistant.GetPersonAge", "MathPlugin.add"} <= set(names)
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path))
    monkeypatch.setenv("LOCALAGENT_EXAMPLES", "")  # restored after the config file sets it
    (tmp_path / "config.toml").write_text("examples = true\n")
    assert "WeatherPlugin.GetWeather" in _offered(monkeypatch, *weather)
    monkeypatch.setenv("LOCALAGENT_EXAMPLES", "")
    no = _offered(monkeypatch, *weather, "--no-examples")
    assert not [n for n in no if n.startswith(EXAMPLE_NAMES)], no


OTHER_PLUGINS = ["WeatherPlugin", "CurrencyPlugin", "TextPlugin", "TimePlugin"]


def test_real_model_run_json(small_model_path):
    """The CLI end to end on the small model: --json has every field, and the invoice tree
    with the default techniques is right (the 0.5B: 5 of 5 seeds; the 1.5B default writes
    Total for the outer call, 0 of 5: docs/BENCHMARKS.md)."""
    args = ["run", INVOICE, "--planner", "tree", "--json", "--examples"]
    for plugin in [*OTHER_PLUGINS, "PersonalAssistant", "MathPlugin"]:
        args += ["--exclude-plugin", plugin]
    proc = run_cli(*args, timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"answer", "planner", "model", "plan", "steps", "usage", "seconds"} <= set(data)
    assert data["answer"] == 21100 and data["model"] == SMALL_MODEL


def test_react_live_view_shows_each_thought_before_its_call(scripted):
    scripted.enqueue('Thought: I need the sum.\nAction: MathPlugin.add\n'
                     'Action Input: {"value1": 2, "value2": 3}',
                     "Thought: I now know the final answer\nFinal Answer: 5")
    result = runner.invoke(app, ["run", "What is 2 plus 3?", "--planner", "react",
                                 "--techniques", "plain"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("Thought: I need the sum.") < out.index("MathPlugin.add(")
    assert out.index("MathPlugin.add(") < out.index("Thought: I now know the final answer")
    assert out.count("Thought:") == 2 and "answer: 5" in out


def test_threads_flag_and_setting_reach_the_model_loader(monkeypatch):
    seen: list[object] = []
    llm = ScriptedLLM()

    def load(name=None, **kwargs):
        seen.append(kwargs.get("n_threads"))
        return llm

    monkeypatch.setattr(localagent.llm, "load_llm", load)
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "0")
    plan = json.dumps({"function": "MathPlugin.add", "args": {"value1": 1, "value2": 2}})
    llm.enqueue(plan, plan)
    args = ["run", "What is 1 plus 2?", "--techniques", "plain", "--quiet"]
    assert runner.invoke(app, [*args, "--threads", "1"]).output.strip() == "3"
    monkeypatch.setenv("LOCALAGENT_THREADS", "2")
    assert runner.invoke(app, args).output.strip() == "3"
    assert seen == [1, 2]
    monkeypatch.setenv("LOCALAGENT_THREADS", "many")
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2 and "LOCALAGENT_THREADS" in bad.output


def test_an_explicit_max_tools_keeps_the_arithmetic_built_ins_too(scripted):
    """`--max-tools N` is the default filter with another N: the four arithmetic built-ins
    stay offered (unless excluded), whatever their similarity to the goal."""
    scripted.enqueue(json.dumps({"function": "DemoPlugin.GetInvoice", "args": {"company": "D"}}))
    result = runner.invoke(app, ["run", "What is the invoice amount of company D?", "--json",
                                 "--techniques", "plain", "--examples", "--max-tools", "2"])
    assert result.exit_code == 0, result.output
    tools = set(json.loads(result.output)["tools"])
    arithmetic = {"MathPlugin.add", "MathPlugin.subtract", "MathPlugin.multiply",
                  "MathPlugin.divide"}
    assert arithmetic <= tools and len(tools - arithmetic) <= 2
    assert "DemoPlugin.GetInvoice" in tools
