"""`Tool`: one callable function together with its data-only `ToolSpec`.

The registry holds `Tool`s; everyone else (retrieval, grammars, prompts) sees only the
spec. `call` is always a coroutine function: async tools run on the event loop, blocking
ones in a worker thread (see `runtime.run_in_thread`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from localagent.errors import PluginLoadError
from localagent.tools.decorator import NAME_RE, marker_of
from localagent.tools.runtime import run_in_thread
from localagent.tools.schema import function_schema
from localagent.tools.spec import ToolSpec

Validator = Callable[[Mapping[str, Any]], dict[str, Any]]
Caller = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """What the registry runs. `validator` raises InvalidArgumentsError listing every problem;
    `call` takes the validated arguments (a dict by parameter name) and returns the value."""

    spec: ToolSpec
    validator: Validator
    call: Caller

    @property
    def qualified_name(self) -> str:
        return self.spec.qualified_name

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        plugin: str,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool | None = None,
    ) -> Tool:
        """Describe `func` (a plain function or a bound method), `@tool`-marked or not.
        `side_effects` (None: the `@tool` marker's, else False) becomes the spec's."""
        marker = marker_of(func)
        name = name or (marker.name if marker else None) or getattr(func, "__name__", "")
        if description is None and marker is not None:
            description = marker.description
        if side_effects is None:
            side_effects = marker.side_effects if marker is not None else False
        check_name(plugin, "plugin")
        check_name(name, "function")
        qualified = f"{plugin}.{name}"
        schema = function_schema(func, qualified, description)
        spec = ToolSpec(
            plugin=plugin,
            name=name,
            description=schema.description,
            parameters=schema.parameters,
            returns=schema.returns,
            kind="native",
            side_effects=side_effects,
        )
        return cls(
            spec=spec,
            validator=lambda args: schema.validate(qualified, args),
            call=make_caller(func, schema.positional_only),
        )


def make_caller(func: Callable[..., Any], positional_only: tuple[str, ...] = ()) -> Caller:
    """A coroutine function calling `func` with keyword arguments (positional-only ones
    passed by position); sync functions go to a worker thread."""

    def split(kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        args = [kwargs[n] for n in positional_only if n in kwargs]
        rest = {k: v for k, v in kwargs.items() if k not in positional_only}
        return args, rest

    if inspect.iscoroutinefunction(func):

        async def call_async(kwargs: dict[str, Any]) -> Any:
            args, rest = split(kwargs)
            return await func(*args, **rest)

        return call_async

    async def call_sync(kwargs: dict[str, Any]) -> Any:
        args, rest = split(kwargs)
        value = await run_in_thread(func, *args, **rest)
        if inspect.isawaitable(value):  # e.g. a partial of an async function
            value = await value
        return value

    return call_sync


def check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PluginLoadError(
            f"invalid {what} name {name!r}: use letters, digits and _ (not starting with a digit)"
        )
