"""`localagent run "GOAL"` (plan and act) and `localagent plan "GOAL"` (plan only).

Exit codes: 0 with an answer, 1 when the agent could not reach one, 2 for bad input.
`--quiet` prints only the answer; `--verbose` adds every prompt and raw model output (on
stderr). `--json` prints one object (answer, planner, model, plan, steps, usage, seconds...);
without it, steps and calls are shown live as they happen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from localagent.cli import app
from localagent.cli.common import EXAMPLES_HELP, console, handle_errors
from localagent.cli.mcp_option import MCP_OPT, close_at_end

_RUN_HELP = """Reach a goal with the tools: plan with the model, then execute.

Example:

    localagent run "What is 100 EUR in USD?" --planner tools --examples
"""

_PLAN_HELP = """Print the plan (JSON) the model makes for a goal, without executing it.

Example:

    localagent plan "What is the total of the invoices of A and C?" --examples > plan.json &&
    localagent exec plan.json --examples
"""

PLUGINS_OPT = typer.Option(None, "--plugins", metavar="PATH",
                           help="Extra plugin: .py file, package, prompt directory or module "
                           "(repeat for several).")
MODEL_OPT = typer.Option(None, "--model", help="Catalog name, .gguf path or model server "
                         "URL#MODEL (docs/deployment.md) (default: $LOCALAGENT_MODEL, else "
                         "the catalog default).")
EXAMPLES_OPT = typer.Option(None, "--examples/--no-examples", help=EXAMPLES_HELP)
THREADS_OPT = typer.Option(None, "--threads", help="llama.cpp threads (default: config "
                           "threads, else one per physical core).")
PLANNER_OPT = typer.Option(None, "--planner", help="sequential | tree | react | tools "
                           "(default: from config, else tree)")
MAX_ITERATIONS_OPT = typer.Option(None, "--max-iterations", help="Most model steps (react, "
                                  "tools; default: from config, else 5).")


ARITHMETIC = ("MathPlugin.add", "MathPlugin.subtract", "MathPlugin.multiply",
              "MathPlugin.divide")


def _filter(threshold: float | None, max_tools: int | None, include: list[str] | None,
            exclude: list[str] | None, exclude_plugin: list[str] | None) -> Any:
    """The filter options; without --threshold/--max-tools, the configured `max_tools`
    (default 6: a 0.5B model plans far better over a few relevant functions). Whenever the
    filter drops functions, the arithmetic built-ins are kept too (unless excluded): goals
    need them without naming them, so no similarity to the goal would keep them."""
    settings = _settings()
    if threshold is None and max_tools is None:
        max_tools = settings.value("max_tools") or None
    elif max_tools == 0:
        max_tools = None  # --max-tools 0: every function
    excluded = set(exclude or ()) | set(exclude_plugin or ())
    if (max_tools or threshold is not None) and not excluded & {"MathPlugin", *ARITHMETIC}:
        include = [*(include or ()), *(f for f in ARITHMETIC if f not in (include or ()))]
    if threshold is None and max_tools is None and not (include or exclude or exclude_plugin):
        return None
    from localagent.retrieval import FilterOptions

    return FilterOptions(relevancy_threshold=threshold, max_relevant_functions=max_tools,
                         included_functions=tuple(include or ()),
                         excluded_functions=tuple(exclude or ()),
                         excluded_plugins=tuple(exclude_plugin or ()),
                         whole_plugins=bool(settings.value("whole_plugins")),
                         translate=bool(settings.value("translate_goals")))


def _settings(**flags: Any) -> Any:
    """Flags over environment over config file over defaults (`localagent config show`)."""
    from localagent.config import load_settings

    return load_settings(flags=flags)


def _agent(cfg: Any, plugins: list[str] | None, flt: Any, model: Any = None,
           verbose: bool = False, yes: bool = False, dry_run: bool = False) -> Any:
    """The agent the settings describe. `model`: a catalog name or path instead of the
    configured one; with a thread count (`threads`) or `verbose`, it is loaded now.
    `yes` / `dry_run`: how side-effect calls are approved (`cli/approval.py`)."""
    from localagent.agent import Agent
    from localagent.cli.approval import cli_approver

    source = _model(model or cfg.value("model"), cfg.value("threads"))
    return Agent(_verbose_model(source) if verbose else source, plugins or (), filter=flt,
                 constrain=cfg.value("constrain"), techniques=cfg.value("techniques"),
                 examples=cfg.value("examples"), approve=cli_approver(yes), dry_run=dry_run,
                 mcp=cfg.value("mcp"))


TECHNIQUES_OPT = typer.Option(
    None, "--techniques", help="Planning techniques: default (the planner's own), plain, "
    "the switches to turn on joined by + (grounded+decline), or changes to the planner's "
    "default, each +name, +name=N or -name, comma-separated (+replan=2,-mentions). "
    "Switches: reasoning, steps, similar, mentions, grounded, decline, native, defaults, fresh, "
    "values, shallow, numbers, ordered, distinct, typed, compact, backrefs, pipe, expression, "
    "instruct, tags, observe, replan=N, vote=K; see docs/techniques.md.")
THRESHOLD_OPT = typer.Option(None, "--threshold",
                             help="Keep tools at least this similar to the goal (0..1).")
MAX_TOOLS_OPT = typer.Option(None, "--max-tools", help="Keep at most this many tools, "
                             "plus the four arithmetic built-ins (default: config max_tools, "
                             "6; 0 keeps all).")
INCLUDE_OPT = typer.Option(None, "--include", help="Always offer this function (repeat).")
EXCLUDE_OPT = typer.Option(None, "--exclude", help="Never offer this function (repeat).")
EXCLUDE_PLUGIN_OPT = typer.Option(None, "--exclude-plugin",
                                  help="Never offer this plugin's functions (repeat).")
SHOW_TOOLS_OPT = typer.Option(False, "--show-tools", help="Print the functions the filter "
                              "kept for the goal, and the goal's English translation it "
                              "also searched with (plan: on stderr, the plan stays JSON).")
YES_OPT = typer.Option(False, "--yes", "-y", help="Approve every call of a function with "
                       "side effects without asking (default: ask on a terminal, refuse "
                       "without one).")
OUTPUT_SCHEMA_OPT = typer.Option(
    None, "--output-schema", metavar="FILE.json", help="Write the answer as JSON of this "
    "schema, from the tools' results (checked before the model loads; --json prints it as "
    "JSON).")
DRY_RUN_OPT = typer.Option(False, "--dry-run", help="Plan and show every call, but run only "
                           "read-only functions: calls with side effects get a placeholder "
                           "result, marked in the output.")


def read_output_schema(path: Path | None) -> Any:
    """The answer type a `--output-schema` file declares, or None; a bad file is one line
    and exit 2 (AnswerTypeError), before any model loads."""
    if path is None:
        return None
    from localagent.answer_type import answer_type_from_file

    return answer_type_from_file(path)


def _show_tools(agent: Any, goal: str, out: Any = console) -> None:
    names = [s.qualified_name for s in agent.tools_for(goal)]
    out.print(f"[bold]tools[/bold] ({len(names)}): " + ", ".join(names), highlight=False)
    english = agent.translation_of(goal)
    if english:
        out.print(f"[bold]searched also as[/bold]: {english}", highlight=False)


@app.command("run", help=_RUN_HELP)
@handle_errors
def run_command(
    ctx: typer.Context,
    goal: str = typer.Argument(..., help="What to achieve, in plain words."),
    planner: str | None = PLANNER_OPT,
    model: str | None = MODEL_OPT,
    plugins: list[str] | None = PLUGINS_OPT,
    mcp: list[str] | None = MCP_OPT,
    examples: bool | None = EXAMPLES_OPT,
    max_iterations: int | None = MAX_ITERATIONS_OPT,
    threads: int | None = THREADS_OPT,
    no_constrain: bool = typer.Option(False, "--no-constrain",
                                      help="Generate without grammars (to compare)."),
    techniques: str | None = TECHNIQUES_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    threshold: float | None = THRESHOLD_OPT,
    max_tools: int | None = MAX_TOOLS_OPT,
    include: list[str] | None = INCLUDE_OPT,
    exclude: list[str] | None = EXCLUDE_OPT,
    exclude_plugin: list[str] | None = EXCLUDE_PLUGIN_OPT,
    show_tools: bool = SHOW_TOOLS_OPT,
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Also show every prompt and raw model output (stderr)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    yes: bool = YES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    output_schema: Path | None = OUTPUT_SCHEMA_OPT,
) -> None:
    from localagent.agent import PLANNERS
    from localagent.errors import UsageError

    if planner is not None and planner not in PLANNERS:
        raise UsageError(f"--planner must be one of {', '.join(PLANNERS)}, not {planner!r}")
    output_type = read_output_schema(output_schema)
    if max_iterations is not None and max_iterations < 1:
        raise UsageError("--max-iterations must be at least 1")
    if verbose and quiet:
        raise UsageError("--verbose and --quiet exclude each other")
    cfg = _settings(model=model, planner=planner, max_iterations=max_iterations,
                    constrain=False if no_constrain else None, techniques=techniques,
                    examples=examples, threads=threads, mcp=mcp or None)
    planner, max_iterations = cfg.value("planner"), cfg.value("max_iterations")
    agent = _agent(cfg, plugins, _filter(threshold, max_tools, include, exclude, exclude_plugin),
                   verbose=verbose, yes=yes, dry_run=dry_run)
    close_at_end(ctx, agent)  # its MCP servers stop when the command ends
    if show_tools and not (as_json or quiet):
        _show_tools(agent, goal)
    result = agent.run(goal, planner=planner, max_iterations=max_iterations,
                       on_event=None if (as_json or quiet) else _LiveView(),
                       output_type=output_type)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False, default=str))
    elif quiet:
        _print_answer_only(result)
    else:
        _print_result(result)
    if dry_run and not as_json:
        from localagent.cli.common import err_console

        err_console.print("dry run: calls with side effects were not executed; their results "
                          "are placeholders", markup=False)
    if not result.ok:
        raise typer.Exit(1)


def _model(name: str | None, threads: int) -> Any:
    """What the agent loads: the name or path as it is (loaded on first use), or with a
    thread count, the model loaded now with it."""
    if not threads:
        return name
    from localagent.llm import load_llm

    return load_llm(name, n_threads=threads)


def _verbose_model(model: Any) -> Any:
    """The model, loaded now and wrapped so each prompt and raw output goes to stderr."""
    from localagent.cli.common import err_console
    from localagent.llm import LLM, load_llm
    from localagent.llm.recording import RecordingLLM, format_exchange

    def show(exchange: Any) -> None:
        err_console.print(format_exchange(exchange), markup=False, highlight=False)

    return RecordingLLM(model if isinstance(model, LLM) else load_llm(model),
                        on_exchange=show)


def _shown_answer(result: Any) -> str:
    """The answer as printed: text as it is, anything else (a typed answer too) as JSON."""
    answer = result.answer_json()
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False,
                                                             default=str)


def _print_answer_only(result: Any) -> None:
    if result.ok:
        answer = _shown_answer(result)
        typer.echo(answer)
    else:
        from localagent.cli.common import err_console

        err_console.print(f"error: no answer: {result.error}", markup=False)


@app.command("plan", help=_PLAN_HELP)
@handle_errors
def plan_command(
    ctx: typer.Context,
    goal: str = typer.Argument(..., help="What to achieve, in plain words."),
    planner: str | None = typer.Option(None, "--planner", help="sequential | tree "
                                       "(default: from config if a plan planner, else tree)"),
    model: str | None = MODEL_OPT,
    plugins: list[str] | None = PLUGINS_OPT,
    mcp: list[str] | None = MCP_OPT,
    examples: bool | None = EXAMPLES_OPT,
    no_constrain: bool = typer.Option(False, "--no-constrain",
                                      help="Generate without grammars (to compare)."),
    techniques: str | None = TECHNIQUES_OPT,
    threshold: float | None = THRESHOLD_OPT,
    max_tools: int | None = MAX_TOOLS_OPT,
    include: list[str] | None = INCLUDE_OPT,
    exclude: list[str] | None = EXCLUDE_OPT,
    exclude_plugin: list[str] | None = EXCLUDE_PLUGIN_OPT,
    show_tools: bool = SHOW_TOOLS_OPT,
    threads: int | None = THREADS_OPT,
) -> None:
    from localagent.cli.common import err_console
    from localagent.errors import UsageError

    if planner is not None and planner not in ("tree", "sequential"):
        raise UsageError(f"--planner must be tree or sequential for a plan, not {planner!r}")
    cfg = _settings(model=model, constrain=False if no_constrain else None,
                    techniques=techniques, examples=examples, threads=threads, mcp=mcp or None)
    if planner is None:
        configured = cfg.value("planner")
        planner = configured if configured in ("tree", "sequential") else "tree"
    agent = _agent(cfg, plugins, _filter(threshold, max_tools, include, exclude, exclude_plugin))
    close_at_end(ctx, agent)
    if show_tools:
        _show_tools(agent, goal, err_console)
    plan = agent.plan(goal, planner=planner)
    typer.echo(plan.to_json(indent=2))


class _LiveView:
    """Prints planner steps and executor calls as they happen."""

    def __init__(self) -> None:
        self.start: float | None = None

    def __call__(self, event: Any) -> None:
        from localagent.trace import describe

        if self.start is None:
            self.start = event.at
        kind = getattr(event, "kind", "")
        if kind == "plan_created":
            console.print("[bold]plan[/bold]", highlight=False)
            console.print_json(json.dumps(event.detail["plan"]))
        elif kind == "react_thought" or (kind == "react_step"
                                         and event.detail.get("final_answer") is not None):
            # an action's thought comes before its call; a final answer's with the answer
            console.print(f"[cyan]Thought:[/cyan] {event.detail.get('thought', '')}",
                          highlight=False)
        elif kind == "tool_turn" and event.detail.get("answer") is None:
            console.print(f"[cyan]turn:[/cyan] {len(event.detail['calls'])} call(s)",
                          highlight=False)
        elif kind not in ("react_thought", "react_step", "tool_turn", "run_finished"):
            depth = getattr(event, "path", "").count(".args.")
            console.print(describe(event, self.start, depth), markup=False, highlight=False)


def _print_result(result: Any) -> None:
    u = result.usage
    console.print(f"[dim]{result.model} / {result.planner}: {u.calls} LLM calls, "
                  f"{u.prompt_tokens_evaluated} prompt tokens evaluated "
                  f"({u.prompt_tokens_reused} reused), {u.completion_tokens} generated, "
                  f"{result.seconds:.1f}s[/dim]", highlight=False)
    if result.ok:
        console.print(f"[bold green]answer:[/bold green] {_shown_answer(result)}",
                      highlight=False)
    else:
        from localagent.cli.common import err_console

        err_console.print(f"error: no answer: {result.error}", markup=False)
