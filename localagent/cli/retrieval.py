"""`localagent tools index` and `localagent tools search`: the tool index from the shell.

Added onto the `tools` group (localagent/cli/tools.py). Heavy imports (chromadb, torch)
happen inside the commands so `--help` stays instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

import typer

from localagent.cli.common import console, err_console, handle_errors
from localagent.cli.mcp_option import MCP_OPT
from localagent.cli.tools import EXAMPLES_OPT, PLUGINS_HELP, _registry, tools_app

if TYPE_CHECKING:
    from localagent.retrieval.index import SyncReport, ToolIndex
    from localagent.tools.spec import ToolSpec


def _specs(plugins: Sequence[str] | None, examples: bool | None,
           mcp: list[str] | None = None, ctx: typer.Context | None = None) -> list[ToolSpec]:
    return list(_registry(list(plugins or []), examples, mcp=mcp, ctx=ctx).specs())


def _sync_with_progress(index: ToolIndex, specs: Sequence[ToolSpec], prune: bool) -> SyncReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("embedding tool descriptions"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("embed", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return index.sync(specs, progress, prune=prune)


def _report_line(report: SyncReport, index: ToolIndex) -> str:
    return (
        f"index {index.location}: {index.count()} functions "
        f"(added {report.added}, updated {report.updated}, removed {report.removed}, "
        f"unchanged {report.unchanged}); embedded {report.embedded}"
    )


@tools_app.command("index")
@handle_errors
def index_command(
    ctx: typer.Context,
    plugins: Optional[list[str]] = typer.Option(None, "--plugins", "-p", help=PLUGINS_HELP),  # noqa: UP045
    examples: Optional[bool] = EXAMPLES_OPT,  # noqa: UP045
    mcp: Optional[list[str]] = MCP_OPT,  # noqa: UP045
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Delete the index folder (with LOCALAGENT_CHROMA_URL: this "
        "embedding model's collection on the server) and embed every function again."
    ),
    prune: Optional[bool] = typer.Option(  # noqa: UP045
        None, "--prune/--no-prune", help="Delete stored functions that are not available here "
        "(default: yes in the local folder, no on a Chroma server, which others share)."
    ),
) -> None:
    """Embed the descriptions of the available functions into the tool index.

    Only new and changed functions are embedded; functions no longer available are removed
    (on a Chroma server only with --prune: other users' functions live there too).

    Example: localagent tools index --plugins my_tools.py
    """
    from localagent.retrieval.index import ToolIndex

    specs = _specs(plugins, examples, mcp, ctx)
    index = ToolIndex(rebuild=rebuild)
    report = _sync_with_progress(index, specs, prune=not index.remote if prune is None else prune)
    console.print(_report_line(report, index), markup=False, highlight=False)


@tools_app.command("search")
@handle_errors
def search_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What you want to do, in words."),
    top_k: int = typer.Option(10, "--top-k", min=1, help="How many functions to show."),
    plugins: Optional[list[str]] = typer.Option(None, "--plugins", "-p", help=PLUGINS_HELP),  # noqa: UP045
    examples: Optional[bool] = EXAMPLES_OPT,  # noqa: UP045
    mcp: Optional[list[str]] = MCP_OPT,  # noqa: UP045
) -> None:
    """Show the functions closest in meaning to QUERY, with their similarity scores.

    Example: localagent tools search "convert euros to dollars" --top-k 5 --examples
    """
    from rich.table import Table

    from localagent.retrieval.index import ToolIndex

    specs = _specs(plugins, examples, mcp, ctx)
    index = ToolIndex()
    _sync_with_progress(index, specs, prune=False)
    by_name = {s.qualified_name: s for s in specs}
    hits = index.search(query, top_k=top_k, among=list(by_name))
    table = Table("rank", "function", "score", "description")
    for rank, hit in enumerate(hits, 1):
        description = by_name[hit.qualified_name].description
        table.add_row(str(rank), hit.qualified_name, f"{hit.score:.3f}", description[:80])
    console.print(table)
