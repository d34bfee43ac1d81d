"""How the CLI approves side-effect calls (`--yes`, a y/n question, or a refusal).

- `--yes`: every side-effect call is approved without asking.
- On a terminal (stdin is one): each distinct side-effect call is shown with its
  arguments and the person answers y/n (default no).
- Otherwise (piped, in CI, under a scheduler): nobody can answer, so every side-effect
  call is refused, and one line on stderr says which call and why.
The executor asks at most once per distinct call in a run (`localagent/side_effects.py`).
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.markup import escape

from localagent.cli.common import err_console
from localagent.side_effects import Approve, ToolCallRequest, approve_all


def cli_approver(yes: bool, *, interactive: bool | None = None,
                 stream: TextIO | None = None) -> Approve:
    """The approver for `--yes` / a terminal / neither. `interactive`: whether a person
    can answer (default: stdin is a terminal); `stream`: where answers are read (tests)."""
    if yes:
        return approve_all
    if interactive is None:
        interactive = sys.stdin.isatty()
    if not interactive:
        return refuse_without_terminal

    def ask(request: ToolCallRequest) -> bool:
        from rich.prompt import Confirm

        return Confirm.ask(f"[bold]{escape(request.describe())}[/bold] has side effects. "
                           "Run it?", console=err_console, default=False, stream=stream)

    return ask


def refuse_without_terminal(request: ToolCallRequest) -> bool:
    """Refuse, saying why in one line (there is nobody to ask)."""
    err_console.print(f"refused: {request.describe()} has side effects; no terminal to ask "
                      "for approval and no --yes", markup=False, highlight=False)
    return False
