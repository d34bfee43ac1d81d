"""How MCP's tools, annotations and results map onto localagent's: the pure half of
`localagent/tools/mcp.py` (no process, no session), whose docstring states the rules.

Command strings to argument vectors, server and tool names to identifiers, tool
annotations to `side_effects`, output schemas to return schemas (the SDK's `{"result": x}`
wrapper undone) and `CallToolResult`s to values or `McpToolError`.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from localagent.errors import RuntimeFailure, UsageError
from localagent.tools.decorator import NAME_RE


class McpServerError(UsageError):
    """An MCP server that cannot be started, initialized or listed (exit code 2)."""


class McpToolError(RuntimeFailure):
    """A tool call the server answered with `isError`, or that failed in the protocol."""


# --- pure parts: commands, names, annotations, results -------------------------------------


def parse_command(command: str | Sequence[str]) -> list[str]:
    """The argument vector of a server command: a string is split like a shell would
    (`shlex.split`, no shell runs), a sequence is taken as it is. McpServerError when empty
    or unbalanced."""
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise McpServerError(f"MCP server command {command!r}: {exc}") from None
    else:
        argv = [str(a) for a in command]
    if not argv or not argv[0].strip():
        raise McpServerError(f"MCP server command {command!r} is empty",
                             hint='give the command that starts it, e.g. "python server.py"')
    return argv


def side_effects(annotations: Any) -> bool:
    """Whether a tool with these MCP annotations (a `ToolAnnotations` or None) changes
    anything outside the run. An explicit `destructiveHint: true` means yes (even beside a
    contradictory `readOnlyHint: true`: the safe reading); `readOnlyHint: true` means no;
    otherwise the tool is not read-only (the spec's default once annotations are given)
    and modifies its environment, destructively or additively: yes. No annotations at all:
    no, a deliberate departure from the spec's default (see the module docstring)."""
    if annotations is None:
        return False
    if getattr(annotations, "destructive_hint", None) is True:
        return True
    return not bool(getattr(annotations, "read_only_hint", None))  # readOnlyHint default: false


def identifier(text: str) -> str:
    """`text` as a plugin or function name: other characters become `_`, a leading digit
    gets a `_` before it; "" stays ""."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text.strip())
    return f"_{name}" if name[:1].isdigit() else name


def plugin_name(server_name: str | None, argv: Sequence[str]) -> str:
    """The plugin a server's tools go to: its own name, else its command's last word that
    is not an option (its stem: `python tools/shop.py` -> `shop`), else `mcp`."""
    name = identifier(server_name or "")
    if name and NAME_RE.match(name):
        return name
    words = [w for w in argv if not w.startswith("-")] or list(argv)
    stem = identifier(Path(words[-1]).stem) if words else ""
    return stem if stem and NAME_RE.match(stem) else "mcp"


def unwrapped_returns(output_schema: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """(return schema, whether results are `{"result": value}` to unwrap). The SDK's server
    wraps a result that is not an object in an object with the one required property
    `result`; the declared return type is that property's schema."""
    if not output_schema:
        return {}, False
    properties = output_schema.get("properties")
    if (output_schema.get("type") == "object" and isinstance(properties, dict)
            and list(properties) == ["result"] and output_schema.get("required") == ["result"]
            and isinstance(properties["result"], dict)):
        inner = {k: v for k, v in properties["result"].items() if k != "title"}
        defs = output_schema.get("$defs")
        return ({**inner, "$defs": defs} if defs else inner), True
    return dict(output_schema), False


def result_value(result: Any, qualified: str, unwrap: bool = False) -> Any:
    """The value of a `CallToolResult`: McpToolError for `isError`; structured content when
    present (unwrapped when its schema says so), else the content blocks' values."""
    if result.is_error:
        text = " ".join(" ".join(_block_texts(result.content)).split())
        raise McpToolError(f"{qualified}: {text or 'the server reported an error'}")
    structured = result.structured_content
    if structured is not None:
        if unwrap and isinstance(structured, dict) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    values = [_block_value(b) for b in result.content]
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _block_texts(blocks: Iterable[Any]) -> Iterator[str]:
    for block in blocks:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            yield text


def _block_value(block: Any) -> Any:
    text = getattr(block, "text", None)
    if getattr(block, "type", None) == "text" and isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    # an image, audio or resource: its description as data (binary payloads left out)
    data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("data", None)
    return data


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (anyio wraps task failures in exception groups)."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def describe(exc: BaseException) -> str:
    """One line for an exception, the first one inside an exception group."""
    exc = _leaf(exc)
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
