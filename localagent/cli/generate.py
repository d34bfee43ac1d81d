"""`localagent generate PROMPT`: a raw completion from a local model."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from localagent.cli import app
from localagent.cli.common import err_console, handle_errors


@app.command("generate")
@handle_errors
def generate(
    prompt: str = typer.Argument(..., help="The text to continue."),
    model: str = typer.Option(None, "--model", "-m",
                              help="Catalog name or .gguf path (default: $LOCALAGENT_MODEL "
                                   "or the catalog default)."),
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", min=1, help="Tokens to generate."),
    temperature: float = typer.Option(0.0, "--temperature", "-t", min=0.0,
                                      help="0 is greedy decoding."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed."),
    n_ctx: int = typer.Option(None, "--n-ctx", min=16, help="Context window (tokens)."),
    stop: Annotated[Optional[list[str]],  # noqa: UP045 (typer needs Optional here on 3.10)
                    typer.Option("--stop", help="Stop sequence (repeatable).")] = None,
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Print usage (tokens, seconds) as JSON on stderr."),
) -> None:
    """Continue PROMPT with a local model and print the text (no chat template).

    Example: localagent generate "def fibonacci(n):" --max-tokens 64
    """
    from localagent.llm.loader import load_llm

    llm = load_llm(model, n_ctx=n_ctx, seed=seed, temperature=temperature)
    completion = llm.complete(prompt, max_tokens=max_tokens, stop=stop or ())
    typer.echo(completion.text)
    if verbose:
        report = {"model": llm.info.name, "finish_reason": completion.finish_reason,
                  **completion.usage.to_dict()}
        err_console.print(json.dumps(report), markup=False)
