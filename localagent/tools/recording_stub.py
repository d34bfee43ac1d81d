"""`RecordingStub`: stands in for the functions behind schema-described tools.

A benchmark that judges which calls a planner makes (BFCL compares function names and
arguments, not what the functions returned) needs no real functions: the stub records
every call and returns a placeholder shaped like the tool's return schema, so a plan keeps
running to its end and every call it would make gets made.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RecordingStub", "placeholder"]


class RecordingStub:
    """Stands in for the functions behind schema tools: records every call, returns a
    deterministic placeholder.

    `calls` lists `(qualified_name, arguments)` in call order (appended under a lock:
    tools may run in worker threads, several at once). One stub can back many tools:
    `schema_tool(schema, stub)` asks it for `for_function(qualified_name, returns)`.

    The placeholder follows the tool's return schema: an object with properties gives a
    dict with one placeholder per property (`"<math.stats.mean>"` for a string, 1 for a
    number or integer, True for a boolean, [] for an array, the first value of an enum);
    a declared scalar type gives that type's placeholder; anything else (no return
    schema, a string) gives `"<result of math.stats>"`. Placeholders keep a plan running
    to its end, so every call it would make gets made and recorded.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def for_function(
        self, qualified_name: str, returns: Mapping[str, Any] | None = None
    ) -> Callable[..., Any]:
        """The callable (keyword arguments) that records calls as `qualified_name` and
        returns the placeholder for `returns` (the tool's return schema)."""
        value = placeholder(returns or {}, qualified_name)

        def record(**kwargs: Any) -> Any:
            with self._lock:
                self.calls.append((qualified_name, copy.deepcopy(kwargs)))
            return copy.deepcopy(value)

        record.__name__ = qualified_name.rsplit(".", 1)[-1]
        return record

    def calls_to(self, qualified_name: str) -> list[dict[str, Any]]:
        """The arguments of every call to `qualified_name`, in order."""
        with self._lock:
            return [args for name, args in self.calls if name == qualified_name]

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()


def placeholder(schema: Mapping[str, Any], qualified_name: str) -> Any:
    """The value a `RecordingStub` returns for a tool whose return schema is `schema`."""
    result = _placeholder(schema, qualified_name)
    return f"<result of {qualified_name}>" if result is _NONE else result


_NONE = object()


def _placeholder(schema: Mapping[str, Any], label: str) -> Any:
    if not isinstance(schema, Mapping):
        return _NONE
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return {}
        out = {}
        for prop, sub in properties.items():
            value = _placeholder(sub, f"{label}.{prop}")
            out[prop] = f"<{label}.{prop}>" if value is _NONE else value
        return out
    # a string or an unknown type: _NONE, so the caller picks the labelled text
    return {"integer": 1, "number": 1, "boolean": True, "array": [], "null": None}.get(kind, _NONE)
