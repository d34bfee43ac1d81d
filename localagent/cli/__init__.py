"""The `localagent` command: noun-verb groups, one module per group.

Each module defines its commands on a typer app and is registered here. Imports of heavy
libraries (llama.cpp, torch, chromadb) happen inside commands so `--help` stays instant.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="localagent",
    help=("Plan and act with local GGUF models, fully offline.\n\n"
          "Example: localagent run \"What is 100 EUR in USD?\" --planner tools --examples"),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Each group module adds itself to `app`; the import order is the help order.
    import importlib

    for module in ("models", "generate", "tools", "retrieval", "run", "chat", "serve", "exec",
                   "config"):
        importlib.import_module(f"localagent.cli.{module}")


_register()
