"""`--mcp "COMMAND ARGS"`: the option every command that offers tools takes, and the rule
that whatever a command started (MCP server processes) stops when the command ends.

The servers themselves are `localagent/tools/mcp.py`; the option only collects commands,
and the config setting `mcp` (`localagent/config.py`) supplies them when it is not given.
"""

from __future__ import annotations

from typing import Any

import typer

MCP_HELP = (
    'Start an MCP server over stdio and offer its tools, as a plugin named after the server: '
    'the command and its arguments in one string, e.g. --mcp "python server.py" (repeat for '
    "several; default: config mcp). Stopped when the command ends."
)
MCP_OPT = typer.Option(None, "--mcp", metavar="COMMAND", help=MCP_HELP)


def mcp_commands(flag: list[str] | None) -> list[str]:
    """The servers to start: the `--mcp` values, else `LOCALAGENT_MCP`, else the config
    file's `mcp`, else none."""
    from localagent.config import load_settings

    return list(load_settings(flags={"mcp": flag or None}).value("mcp"))


def close_at_end(ctx: typer.Context, resource: Any) -> Any:
    """Have `resource.close()` run when the command of `ctx` ends, whatever way it ends
    (answer, error, exit code); returns `resource`. Commands take `ctx: typer.Context`
    (typer passes it, it is no option) for this."""
    ctx.call_on_close(resource.close)
    return resource
