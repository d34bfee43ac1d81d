"""`localagent serve`: the local model behind an OpenAI-compatible endpoint.

Binds to loopback by default: a wider `--host` without `--api-key` is allowed (a trusted
network) but warned about. Prints one line with the base URL once the socket is bound, so
a script can wait for it (or poll `GET /health`). Ends on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer

from localagent.cli import app
from localagent.cli.common import err_console, handle_errors

LOOPBACK = ("127.0.0.1", "localhost", "::1")

_SERVE_HELP = """Serve a local model over HTTP, OpenAI-compatible: /v1/completions,
/v1/chat/completions, /v1/models. Grammars come in vLLM's field
(structured_outputs.grammar, llguidance Lark text) and are enforced by localagent's own
constraint layer; requests wait in turn for the one model.

Example: localagent serve --port 8000 --api-key s3cret, then elsewhere
localagent run GOAL --model "http://HOST:8000/v1#qwen2.5-coder-0.5b-instruct"
(with LOCALAGENT_API_KEY=s3cret)."""


@app.command("serve", help=_SERVE_HELP)
@handle_errors
def serve_command(
    model: str | None = typer.Option(None, "--model", "-m", help="Catalog name or .gguf "
                                     "path to serve (default: $LOCALAGENT_MODEL, else the "
                                     "catalog default)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default: "
                             "loopback only; 0.0.0.0 for every interface)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535,
                             help="TCP port (0: any free port, printed at start)."),
    api_key: str | None = typer.Option(None, "--api-key", envvar="LOCALAGENT_SERVE_API_KEY",
                                       help="Require 'Authorization: Bearer KEY' on every "
                                       "route but /health (env LOCALAGENT_SERVE_API_KEY)."),
    threads: int | None = typer.Option(None, "--threads", min=0, help="llama.cpp threads "
                                       "(default: config threads; 0: one per physical "
                                       "core)."),
    n_ctx: int | None = typer.Option(None, "--n-ctx", min=16, help="Context window in "
                                     "tokens (default: the catalog entry's)."),
) -> None:
    from localagent.config import load_settings
    from localagent.errors import UsageError
    from localagent.llm.loader import load_llm
    from localagent.llm.remote import is_remote_source
    from localagent.server import ModelServer

    cfg = load_settings(flags={"model": model, "threads": threads})
    name = cfg.value("model")
    if is_remote_source(name):
        raise UsageError(f"serve needs a local model (catalog name or .gguf path), got {name}")
    llm = load_llm(name, n_ctx=n_ctx, n_threads=cfg.value("threads") or None, remote=False)
    try:
        server = ModelServer(llm, host=host, port=port, api_key=api_key)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if host not in LOOPBACK and not api_key:
        err_console.print(f"warning: serving on {host} without --api-key: anyone who can "
                          "reach this port can use the model", markup=False)
    typer.echo(f"serving {server.model_name} on {server.base_url} "
               f"(use --model \"{server.base_url}#{server.model_name}\")", err=False)
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    finally:
        server.close()


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)
