"""A small MCP server for the end-to-end test: a library catalogue, over stdio.

`python library.py` serves two read-only lookups over fixed data (the SDK's `MCPServer`).
"""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("Library", log_level="WARNING")

Title = Literal["Dune", "Emma", "Ulysses", "Beloved"]
AUTHORS = {"Dune": "Frank Herbert", "Emma": "Jane Austen", "Ulysses": "James Joyce",
           "Beloved": "Toni Morrison"}
PAGES = {"Dune": 412, "Emma": 474, "Ulysses": 730, "Beloved": 324}
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(annotations=READ_ONLY)
def get_author(title: Title) -> str:
    """Get the name of the author who wrote a book, by the book's title."""
    return AUTHORS[title]


@server.tool(annotations=READ_ONLY)
def count_pages(title: Title) -> int:
    """Get the number of pages of a book, by the book's title."""
    return PAGES[title]


if __name__ == "__main__":
    server.run()
