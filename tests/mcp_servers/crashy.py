"""An MCP server whose `crash` tool ends its own process mid-call (`python crashy.py`)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("Crashy", log_level="WARNING")


@server.tool()
def crash() -> str:
    """End the server process at once, without an answer."""
    os._exit(1)


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run()
