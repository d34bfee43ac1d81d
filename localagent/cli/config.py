"""`localagent config show|path`: every setting, its value, and where it came from.

Precedence (highest first): flag > environment variable > `$LOCALAGENT_HOME/config.toml`
> built-in default (see `localagent.config`). The app callback below copies values set in
the config file into the environment before any command runs, so commands that read
`LOCALAGENT_MODEL` (and the other variables) honour the file without knowing about it; a
variable already set is never overwritten (env beats the file).
"""

from __future__ import annotations

import json
import os

import typer
from rich.table import Table

from localagent.cli import app
from localagent.cli.common import console, handle_errors

config_app = typer.Typer(
    help="Show the settings and where each comes from (flag > env > config file > default)."
    "\n\nExample: localagent config show",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")


@app.callback()
def _apply_config_file(ctx: typer.Context) -> None:
    """Plan and act with local GGUF models, fully offline."""
    if ctx.invoked_subcommand == "config":  # `config show` reports a bad file itself
        return
    _apply()


@handle_errors
def _apply() -> None:
    from localagent.config import apply_config_file

    apply_config_file()


@config_app.command("show")
@handle_errors
def show(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Every setting: its value, and its source (flag, env VAR, config FILE or default).

    Example: LOCALAGENT_MODEL=smollm2-135m-instruct localagent config show
    """
    from localagent.config import BY_NAME, load_settings

    settings = load_settings()
    if as_json:
        typer.echo(
            json.dumps(
                {s.name: {"value": _shown(s.name, s.value), "source": s.source}
                 for s in settings}, indent=2
            )
        )
        return
    table = Table(title=f"settings (config file: {settings.path})")
    for column in ("setting", "value", "source", "environment variable"):
        table.add_column(column)
    for s in settings:
        short = {"env": "env", "config": "config file"}.get(s.source.split()[0], s.source)
        table.add_row(s.name, _shown(s.name, s.value), short, BY_NAME[s.name].env)
    console.print(table)
    console.print("precedence: flag > environment variable > config file > default", style="dim")


@config_app.command("path")
@handle_errors
def path() -> None:
    """Print the config file's path ($LOCALAGENT_HOME/config.toml), even if it does not exist.

    Example: $EDITOR "$(localagent config path)"
    """
    from localagent.config import config_path

    typer.echo(str(config_path(os.environ)))


SECRETS = ("api_key",)


def _shown(name: str, value: object) -> str:
    """A setting's value as printed: secrets only as whether they are set."""
    if name in SECRETS:
        return "(set)" if value else "(not set)"
    return str(value)
