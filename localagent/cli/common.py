"""What every CLI command shares: one-line errors with agreed exit codes, consoles.

Exit codes: 0 success (an answer), 1 the run could not reach an answer, 2 bad input.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from localagent.errors import LocalAgentError

console = Console()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 2) -> None:
    """Print one line on stderr and exit; never a traceback."""
    err_console.print(f"error: {message}", markup=False)
    raise typer.Exit(code)


def handle_errors(func: F) -> F:
    """Turn our exceptions (and a few expected OS ones) into one line + exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except LocalAgentError as exc:
            fail(exc.one_line(), exc.exit_code)
        except KeyboardInterrupt:
            err_console.print("interrupted", markup=False)
            raise typer.Exit(130) from None
        except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
            fail(str(exc), 2)

    return wrapper  # type: ignore[return-value]


EXAMPLES_HELP = (
    "Also offer the example plugins, which answer from fixed demo data (DemoPlugin, "
    "PersonalAssistant, WeatherPlugin, CurrencyPlugin)."
)


def use_examples(flag: bool | None) -> bool:
    """Whether to offer the example plugins: `--examples/--no-examples`, else
    `LOCALAGENT_EXAMPLES`, else the config file's `examples`, else no."""
    from localagent.config import load_settings

    return bool(load_settings(flags={"examples": flag}).value("examples"))


def is_tty() -> bool:
    return sys.stdout.isatty()
