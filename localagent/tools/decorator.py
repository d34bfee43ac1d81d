"""`@tool`: mark a function or a plugin method as callable by the agent.

The decorator only attaches a marker and returns the function unchanged, so a decorated
method still binds like any method and a decorated function can still be called directly.
The schema is derived later, when a registry adds the plugin (methods are bound to their
instance only then).

`side_effects=True` declares that a call changes something outside the run (sends,
writes, pays, deletes): the executor then asks for approval first and runs each distinct
call at most once per run (`localagent/side_effects.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from localagent.errors import PluginLoadError

F = TypeVar("F", bound=Callable[..., Any])

MARKER = "__localagent_tool__"
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ToolMarker:
    name: str | None = None
    description: str | None = None
    side_effects: bool = False


@overload
def tool(func: F, *, name: str | None = None, description: str | None = None,
         side_effects: bool = False) -> F: ...


@overload
def tool(
    func: None = None, *, name: str | None = None, description: str | None = None,
    side_effects: bool = False,
) -> Callable[[F], F]: ...


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: bool = False,
) -> Any:
    """Mark `func` as a tool. Works bare (`@tool`) and with arguments (`@tool(name=...)`).

    `name` defaults to the function's name and must be an identifier (it becomes the
    second half of `Plugin.Function`); `description` defaults to the docstring summary.
    `side_effects`: the call changes the world, so it needs approval and runs at most once
    per distinct call in a run (`ToolSpec.side_effects`).
    """
    if not isinstance(side_effects, bool):
        raise PluginLoadError(f"side_effects must be True or False, got {side_effects!r}")
    if name is not None and not NAME_RE.match(name):
        raise PluginLoadError(f"invalid tool name {name!r}: use letters, digits and _")

    def mark(f: F) -> F:
        target = f.__func__ if isinstance(f, (staticmethod, classmethod)) else f
        if not callable(target):
            raise PluginLoadError(f"@tool needs a function, got {type(f).__name__}")
        setattr(target, MARKER, ToolMarker(name=name, description=description,
                                           side_effects=side_effects))
        return f

    return mark(func) if func is not None else mark


def marker_of(obj: Any) -> ToolMarker | None:
    """The marker of a decorated function, staticmethod or classmethod, else None."""
    target = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    marker = getattr(target, MARKER, None)
    return marker if isinstance(marker, ToolMarker) else None
