"""How a tool call runs: blocking functions in a worker thread, results made JSON-safe.

Why a daemon thread per call and not `asyncio.to_thread`: Python cannot kill a thread, so a
sync tool that hangs past its timeout keeps running. In the default executor such a thread
would block `asyncio.run()` at shutdown (it joins the executor) and the interpreter at
exit. A daemon thread does neither: the caller gets its timeout result at once, and the
hung thread is abandoned (it still holds whatever it holds, and finishes on its own, or
dies with the process). Threads are cheap next to any tool worth calling.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic_core import PydanticSerializationError, to_jsonable_python

T = TypeVar("T")


class UnserializableValue(Exception):
    """A tool returned something that has no JSON form."""


async def run_in_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run blocking `func` in a fresh daemon thread; await its result without blocking."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled meanwhile (a timeout): nobody waits any more
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        try:
            value, error = context.run(func, *args, **kwargs), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task, which decides
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is closed: the caller has long gone
            pass

    name = f"localagent-tool-{getattr(func, '__name__', 'call')}"
    threading.Thread(target=target, name=name, daemon=True).start()
    return await future


def to_json_value(value: Any) -> Any:
    """`value` as plain JSON data (pydantic models, dataclasses, dates, enums converted).

    Raises UnserializableValue when there is no JSON form (NaN and infinity included:
    they are not JSON).
    """
    try:
        plain = to_jsonable_python(value)
        json.dumps(plain, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise UnserializableValue(
            f"a value of type {type(value).__name__} cannot be turned into JSON ({exc})"
        ) from None
    return plain
