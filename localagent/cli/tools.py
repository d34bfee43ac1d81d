"""`localagent tools list|call`: the function registry from the shell.

`tools index` and `tools search` are added onto `tools_app` by localagent/cli/retrieval.py.
Models are loaded only when a prompt function is actually called.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional

import typer

from localagent.cli import app
from localagent.cli.common import EXAMPLES_HELP, console, handle_errors, use_examples
from localagent.cli.mcp_option import MCP_OPT
from localagent.errors import LocalAgentError, RuntimeFailure, UsageError

if TYPE_CHECKING:
    from localagent.tools.registry import ToolRegistry
    from localagent.tools.spec import ToolResult, ToolSpec

tools_app = typer.Typer(
    help="List and call the available functions (built-ins, your plugins, --examples).\n\n"
    "Example: localagent tools list --plugins my_tools.py",
    no_args_is_help=True,
)
app.add_typer(tools_app, name="tools")

PLUGINS_HELP = (
    "Plugin to load besides the built-ins: a .py file, a package, a module name "
    "or a prompt-plugin folder (repeatable)."
)
EXAMPLES_OPT = typer.Option(None, "--examples/--no-examples", help=EXAMPLES_HELP)


def _registry(
    plugins: list[str] | None, examples: bool | None, model: str | None = None,
    mcp: list[str] | None = None, ctx: typer.Context | None = None,
) -> ToolRegistry:
    """The built-ins, the example plugins if asked for (flag, env or config), `plugins`,
    and the tools of the MCP servers (`--mcp`, else config `mcp`), which stop when the
    command of `ctx` ends (without a `ctx`, no server is started)."""
    from localagent.cli.mcp_option import close_at_end, mcp_commands
    from localagent.tools.mcp import connect_servers
    from localagent.tools.registry import default_registry

    def load_model() -> Any:
        from localagent.llm import load_llm

        return load_llm(model)

    registry = default_registry(plugins or [], llm=load_model, examples=use_examples(examples))
    commands = mcp_commands(mcp) if ctx is not None else []
    if commands:
        close_at_end(ctx, connect_servers(commands, registry))
    return registry


@tools_app.command("list")
@handle_errors
def list_tools(
    ctx: typer.Context,
    plugins: Optional[list[str]] = typer.Option(None, "--plugins", "-p", help=PLUGINS_HELP),  # noqa: UP045
    examples: Optional[bool] = EXAMPLES_OPT,  # noqa: UP045
    mcp: Optional[list[str]] = MCP_OPT,  # noqa: UP045
    as_json: bool = typer.Option(False, "--json", help="Print the specs as JSON instead."),
) -> None:
    """Show every function with its arguments, return type and description.

    Example: localagent tools list --plugins localagent/samples/prompt_plugins
    """
    specs = _registry(plugins, examples, mcp=mcp, ctx=ctx).specs()
    if as_json:
        typer.echo(json.dumps([_spec_dict(s) for s in specs], indent=2, ensure_ascii=False))
        return
    console.print(_table(specs))


def _table(specs: list[ToolSpec]) -> Any:
    from rich.table import Table

    from localagent.tools.manual import arg_label, type_label

    table = Table(title=f"{len(specs)} functions", show_lines=True)
    for column in ("function", "kind", "arguments", "returns", "description"):
        table.add_column(column, overflow="fold")
    for spec in specs:
        required = set(spec.parameters.get("required", []))
        args = "\n".join(
            arg_label(name, schema, name in required)
            for name, schema in spec.parameters.get("properties", {}).items()
        )
        returns = type_label(spec.returns) if spec.returns else "unknown"
        table.add_row(spec.qualified_name, spec.kind, args or "-", returns, spec.description)
    return table


def _spec_dict(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.qualified_name,
        "kind": spec.kind,
        "description": spec.description,
        "parameters": spec.parameters,
        "returns": spec.returns,
    }


@tools_app.command("call")
@handle_errors
def call_tool(
    ctx: typer.Context,
    function: str = typer.Argument(..., help="The function, as Plugin.Function."),
    arg: Optional[list[str]] = typer.Option(  # noqa: UP045
        None, "--arg", "-a", help="An argument as name=value (repeatable); JSON values accepted."
    ),
    plugins: Optional[list[str]] = typer.Option(None, "--plugins", "-p", help=PLUGINS_HELP),  # noqa: UP045
    examples: Optional[bool] = EXAMPLES_OPT,  # noqa: UP045
    mcp: Optional[list[str]] = MCP_OPT,  # noqa: UP045
    model: Optional[str] = typer.Option(  # noqa: UP045
        None,
        "--model",
        "-m",
        help="Model for prompt functions: catalog name or .gguf path (default: $LOCALAGENT_MODEL "
        "or the catalog default).",
    ),
    timeout: Optional[float] = typer.Option(  # noqa: UP045
        None, "--timeout", min=0.0, help="Seconds before giving up."
    ),
    raw: bool = typer.Option(False, "--raw", help="Print a text result as plain text, not JSON."),
) -> None:
    """Call one function and print its result as JSON.

    Example: localagent tools call DemoPlugin.GetInvoice --arg company=C --examples
    """
    registry = _registry(plugins, examples, model, mcp, ctx)
    spec = registry.spec(function)
    args = parse_cli_args(arg or [], spec)
    registry.validate_args(function, args)  # bad arguments: exit 2 before anything runs
    result = registry.invoke(function, args, timeout=timeout)
    if result.error is not None:
        raise _result_error(result)
    if raw and isinstance(result.value, str):
        typer.echo(result.value)
    else:
        typer.echo(json.dumps(result.value, indent=2, ensure_ascii=False))


def parse_cli_args(pairs: list[str], spec: ToolSpec) -> dict[str, Any]:
    """`name=value` pairs; a value is parsed as JSON unless the argument takes text."""
    properties = spec.parameters.get("properties", {})
    args: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--arg {pair!r}: expected name=value")
        if name in args:
            raise UsageError(f"--arg {name} given twice")
        args[name] = value if _takes_text(properties.get(name, {})) else _json_or_text(value)
    return args


def _takes_text(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", [schema])
    return any(o.get("type") == "string" for o in options) or not schema


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _result_error(result: ToolResult) -> LocalAgentError:
    assert result.error is not None
    cause = result.error.exception
    if isinstance(cause, LocalAgentError):
        return cause
    return RuntimeFailure(f"{result.function} failed: {result.error.message}")
