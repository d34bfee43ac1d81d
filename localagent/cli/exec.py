"""`localagent exec plan.json`: run a saved plan, no model needed.

The plan is parsed and validated against the registry before anything runs (a bad plan is
bad input: one line, exit code 2). The trace is printed as calls start and finish; the
answer comes last. Exit code 0 with an answer, 1 when the run could not reach one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from localagent.cli import app
from localagent.cli.common import EXAMPLES_HELP, handle_errors
from localagent.cli.mcp_option import MCP_OPT

_HELP = """Execute a saved plan (sequential or tree JSON) with the registered tools.

Example:

    localagent exec plan.json --examples --json

where plan.json holds a plan such as {"function": "DemoPlugin.Total", "args": {"value1": 1, "value2": {"function": "DemoPlugin.GetInvoice", "args": {"company": "A"}}}}
(your own plugins: --plugins ./my_tools.py)
"""


PlanFile = Annotated[Path, typer.Argument(help="Plan JSON: typed (as saved) or raw.")]
Plugins = Annotated[
    Optional[list[str]],  # noqa: UP045 (typer reads the annotation at run time)
    typer.Option("--plugins", metavar="PATH",
                 help="Extra plugin: .py file, package, prompt directory or module (repeat)."),
]
Examples = Annotated[
    Optional[bool],  # noqa: UP045
    typer.Option("--examples/--no-examples", help=EXAMPLES_HELP),
]
OnError = Annotated[Literal["stop", "continue"], typer.Option(
    "--on-error", help="stop: end at the first failed call; continue: record it and finish "
    "the calls that do not need its value.")]


@app.command("exec", help=_HELP)
@handle_errors
def exec_command(
    ctx: typer.Context,
    plan_file: PlanFile,
    plugins: Plugins = None,
    examples: Examples = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per call.")] = 60.0,
    max_calls: Annotated[int, typer.Option(help="Budget of tool calls.")] = 100,
    max_seconds: Annotated[float, typer.Option(help="Budget of seconds.")] = 600.0,
    on_error: OnError = "stop",
    max_depth: Annotated[int, typer.Option(help="Deepest nesting of calls allowed.")] = 4,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every call of a function "
                                      "with side effects without asking (default: ask on a "
                                      "terminal, refuse without one).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Run only read-only functions: "
                                          "calls with side effects get a placeholder "
                                          "result.")] = False,
    mcp: Optional[list[str]] = MCP_OPT,  # noqa: UP045
) -> None:
    from localagent.cli.approval import cli_approver
    from localagent.cli.tools import _registry
    from localagent.executor import ExecutionPolicy, Executor
    from localagent.plan import plan_from_json, plan_to_dict, validate
    from localagent.trace import describe

    plan = plan_from_json(plan_file.read_text(encoding="utf-8"))
    registry = _registry(plugins, examples, mcp=mcp, ctx=ctx)
    validate(plan, registry, max_depth=max_depth)
    policy = ExecutionPolicy(call_timeout=timeout, max_calls=max_calls, max_seconds=max_seconds,
                             on_error=on_error, max_depth=max_depth)
    from localagent.side_effects import SideEffectLedger

    executor = Executor(registry, policy,
                        effects=SideEffectLedger(cli_approver(yes), dry_run=dry_run))
    start: list[float] = []

    def show(event: Any) -> None:
        if not start:
            start.append(event.at)
        depth = getattr(event, "path", "").count(".args.")
        typer.echo(describe(event, start[0], depth))

    result = executor.run_sync(plan, on_event=None if as_json else show, validate_first=False)
    if as_json:
        payload = {"answer": result.value, "plan": plan_to_dict(plan), **result.to_dict()}
        typer.echo(json.dumps(payload, ensure_ascii=False))
    elif result.ok:
        answer = result.value if isinstance(result.value, str) else json.dumps(result.value)
        typer.echo(f"answer: {answer}")
    if not result.ok:
        assert result.error is not None
        if not as_json:
            typer.echo(f"error: {result.error.message}", err=True)
        raise typer.Exit(1)
