"""A small MCP server for the tests: a shop's stock, over stdio (`python inventory.py`).

Built with the SDK's own server (`MCPServer`, FastMCP before mcp 2) so the client side is
tested against the real protocol. Fixed data; `set_stock` changes it for this process only.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Literal, TypedDict

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("Inventory", log_level="WARNING")

STOCK = {"X1": 14, "K9": 3, "B7": 250}
PRICES = {"X1": 2.5, "K9": 120.0, "B7": 0.2}

Sku = Literal["X1", "K9", "B7"]


class Product(TypedDict):
    sku: str
    units: int
    price: float


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_stock(sku: Sku) -> int:
    """Get the number of units in stock of a product, by its SKU."""
    return STOCK[sku]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_product(sku: Sku) -> Product:
    """Get a product's record: SKU, units in stock and unit price."""
    return {"sku": sku, "units": STOCK[sku], "price": PRICES[sku]}


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def set_stock(sku: Sku, units: int) -> str:
    """Set the number of units in stock of a product."""
    STOCK[sku] = units
    return f"{sku}: {units}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def add_note(text: str) -> str:
    """Append a note to the shop's log (additive: nothing is overwritten)."""
    return "noted"


@server.tool(annotations=ToolAnnotations(title="Reorder level"))
def reorder_level(sku: Sku) -> int:
    """The stock level under which a product is reordered."""
    return 5


@server.tool(structured_output=False)
def list_skus() -> str:
    """List every product SKU, as JSON text."""
    import json

    return json.dumps(sorted(STOCK))


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def count_all(wait_seconds: float = 0.0) -> int:
    """Count every unit in stock, after waiting `wait_seconds` (a slow lookup)."""
    await asyncio.sleep(wait_seconds)
    return sum(STOCK.values())


@server.tool()
def discontinue(sku: Sku) -> str:
    """Discontinue a product (always fails: the shop keeps every product)."""
    raise ToolError(f"cannot discontinue {sku}: the shop keeps every product")


if __name__ == "__main__":
    # `--pid-file PATH`: write this process's id there (the tests check it is gone after close).
    if "--pid-file" in sys.argv:
        Path(sys.argv[sys.argv.index("--pid-file") + 1]).write_text(str(os.getpid()))
    server.run()
