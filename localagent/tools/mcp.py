"""Tools from an MCP server: a Model Context Protocol server started over stdio.

    with McpServer("python server.py") as server:      # started, tools listed
        registry.add_tool(server.tools[0])              # Inventory.get_stock, like any tool

    servers = connect_servers(["python server.py"], registry)   # all or nothing
    ...
    servers.close()                                     # the server processes are gone

Everything goes through the official SDK (`mcp`): `stdio_client` spawns the process,
`ClientSession` initializes, lists the tools (every page) and calls them. Each listed
tool becomes a `schema_tool` (its `inputSchema` is what the grammar and the argument
validator see, its `outputSchema` the return schema), so an MCP tool is validated,
filtered, indexed and planned exactly like a Python one.

Contracts:

- **Naming.** The plugin is named after the server's own name in its initialize result
  (`serverInfo.name`, e.g. `MCPServer("Inventory")` -> `Inventory`), with characters
  that are not letters, digits or `_` replaced by `_` (`mcp-server` -> `mcp_server`); a
  server that sends an empty name is named after the last word of its command that is not
  an option, without extension (`python tools/shop.py` -> `shop`). Why the server's name:
  it is what the server's author chose and what users see in other MCP clients, while a
  command (`npx -y @scope/pkg /some/dir`) rarely yields a readable name. `McpServer(name=)`
  overrides it. Tool names are made identifiers the same way (`read-file` -> `read_file`);
  calls use the server's original name.
- **Side effects** (`ToolSpec.side_effects`) follow the tool's MCP annotations with the
  spec's defaults (`readOnlyHint` defaults to false, `destructiveHint` to true):
  `readOnlyHint: true` means none; otherwise the tool modifies its environment, whether
  destructively or additively, so it has side effects. A tool with **no annotations at
  all** is taken as free of side effects. This deliberately departs from the spec's
  default (which would make it a modifying tool): most servers annotate nothing (the SDK's
  own server adds annotations only when asked), and treating every unannotated lookup as
  side-effecting would make each call wait for approval and run once per run, which makes
  such servers unusable without a person at the keyboard. Annotations are hints from the
  server either way; the spec says never to trust them from an untrusted server.
- **Results.** `structuredContent` when the server sent it, else the text content (parsed
  as JSON when it is JSON; several blocks give a list). The SDK's own server wraps a
  result that is not an object as `{"result": value}` with an output schema of exactly
  that shape (the spec required object results until 2026-07-28); such a schema is
  unwrapped, so a tool declared `-> int` returns an integer with return schema integer.
- **Errors.** A server that cannot be spawned, exits, answers with an error or does not
  finish initializing within `start_timeout` (default `LOCALAGENT_MCP_TIMEOUT`, which the
  config file's `mcp_timeout` fills in for the CLI, else 30 s)
  raises `McpServerError` (a UsageError: exit code 2, one line, the last line the server
  wrote on stderr as the hint), after shutting it down; nothing is registered.
  A call whose result has `isError`, or that fails in the protocol, raises `McpToolError`,
  which the registry turns into a `ToolError` in the trace like any tool failure.
- **Lifetime.** One daemon thread per server owns its own event loop, the transport and
  the session for the whole run; calls from any event loop or thread are submitted to it
  with `asyncio.run_coroutine_threadsafe` (the SDK's anyio streams and cancel scopes must
  stay in the task that entered them). `close()` (or leaving the `with` block) ends the
  session and the SDK's shutdown sequence stops the process: stdin closed, then SIGTERM,
  then SIGKILL. A server still open at interpreter exit is closed then. The server's
  stderr goes to a temporary file (read for error messages only), so its logs do not mix
  with the command's output.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shlex
import tempfile
import threading
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

from typing_extensions import Self

from localagent.errors import DuplicateFunctionError, LocalAgentError, UsageError
from localagent.tools.decorator import NAME_RE
from localagent.tools.from_schema import schema_tool
from localagent.tools.function import Tool
from localagent.tools.mcp_mapping import (
    McpServerError,
    McpToolError,
    describe,
    identifier,
    parse_command,
    plugin_name,
    result_value,
    side_effects,
    unwrapped_returns,
)

if TYPE_CHECKING:
    from localagent.tools.registry import ToolRegistry
    from localagent.tools.spec import ToolSpec

__all__ = [
    "McpServer",
    "McpServerError",
    "McpServers",
    "McpToolError",
    "connect_servers",
    "identifier",
    "parse_command",
    "plugin_name",
    "result_value",
    "side_effects",
    "unwrapped_returns",
]

DEFAULT_START_TIMEOUT = 30.0
TIMEOUT_ENV = "LOCALAGENT_MCP_TIMEOUT"
STOP_TIMEOUT = 15.0  # the SDK's own shutdown escalation takes at most ~7 s


# --- the connection: one thread, its own loop, the transport and the session -----------------


class _Connection:
    """Owns the event loop (in a daemon thread), the stdio transport and the session.

    The SDK's transport and session are anyio context managers that must be entered and
    left by one task; `_main` is that task, and it waits for `stop()` between the two.
    """

    def __init__(self, argv: list[str], env: dict[str, str] | None, cwd: str | None,
                 errlog: IO[str]) -> None:
        self.argv, self.env, self.cwd, self.errlog = argv, env, cwd, errlog
        self.loop = asyncio.new_event_loop()
        self.ready: concurrent.futures.Future[tuple[Any, list[Any]]] = concurrent.futures.Future()
        self.session: Any = None
        self.closing = False
        self._stop_event: asyncio.Event | None = None
        self._main_task = self.loop.create_task(self._main())
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"localagent-mcp-{Path(argv[0]).name}")

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main_task)
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:  # calls still in flight when the session ended
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            self.loop.close()

    async def _main(self) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        self._stop_event = asyncio.Event()
        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=self.env,
                                       cwd=self.cwd)
        try:
            async with (stdio_client(params, errlog=self.errlog) as (read, write),
                        ClientSession(read, write) as session):
                info = await session.initialize()
                tools = await _list_tools(session)
                self.session = session
                self.ready.set_result((info, tools))
                await self._stop_event.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to whoever waits for the start
            if not self.ready.done():
                self.ready.set_exception(exc)
        finally:
            self.session = None

    async def _call(self, name: str, args: dict[str, Any], shown: str) -> Any:
        session = self.session
        if session is None:
            raise McpToolError(f"{shown}: the MCP server is not running")
        try:
            return await session.call_tool(name, args)
        except asyncio.CancelledError:
            if self.closing:  # the run ended under this call: an error, not a cancellation
                raise McpToolError(f"{shown}: the MCP server was shut down during the call"
                                   ) from None
            raise
        except Exception as exc:  # noqa: BLE001 - protocol failures become tool errors
            raise McpToolError(f"{shown}: {describe(exc)}") from None

    def call(self, name: str, args: dict[str, Any],
             shown: str) -> concurrent.futures.Future[Any]:
        """Submit one `tools/call` to the session's loop, from any thread; `shown` names
        the tool in error messages."""
        if self.session is None or self.closing:
            raise McpToolError(f"{shown}: the MCP server is not running")
        coro = self._call(name, args, shown)
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the loop closed meanwhile
            coro.close()
            raise McpToolError(f"{shown}: the MCP server is not running") from None

    def stop(self) -> None:
        """End the session (or the start under way) and wait for the process to stop."""
        self.closing = True
        if self.thread.is_alive():
            try:
                self.loop.call_soon_threadsafe(self._request_stop)
            except RuntimeError:  # the loop already closed
                pass
            self.thread.join(STOP_TIMEOUT)
        elif not self.thread.ident and not self.loop.is_closed():  # never started
            self._main_task.cancel()
            self.loop.close()

    def _request_stop(self) -> None:
        if self.ready.done() and self._stop_event is not None:
            self._stop_event.set()
        else:
            self._main_task.cancel()


async def _list_tools(session: Any) -> list[Any]:
    """Every tool the server lists, following `nextCursor` pages."""
    from mcp.types import PaginatedRequestParams

    listed = await session.list_tools()
    tools = list(listed.tools)
    seen: set[str] = set()
    while listed.next_cursor and listed.next_cursor not in seen:
        seen.add(listed.next_cursor)
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
    return tools


def _start_timeout(value: float | None) -> float:
    if value is not None:
        if value <= 0:
            raise UsageError(f"the MCP start timeout must be positive, got {value}")
        return float(value)
    raw = os.environ.get(TIMEOUT_ENV)
    if not raw:
        return DEFAULT_START_TIMEOUT
    try:
        number = float(raw)
    except ValueError:
        number = 0.0
    if number <= 0:
        raise UsageError(f"{TIMEOUT_ENV}={raw!r}: expected a positive number of seconds")
    return number


# --- the public server object ----------------------------------------------------------------


class McpServer:
    """One MCP server over stdio, its tools as `Tool`s of one plugin.

    `command`: a string (split like a shell would) or an argument vector. `env`: extra
    environment variables (the SDK passes only a safe few of ours, PATH and HOME among
    them). `start()` spawns, initializes and lists; `close()` stops the process. Use it as
    a context manager to have both.
    """

    def __init__(self, command: str | Sequence[str], *, start_timeout: float | None = None,
                 name: str | None = None, env: dict[str, str] | None = None,
                 cwd: str | Path | None = None) -> None:
        self.argv = parse_command(command)
        self.command = command if isinstance(command, str) else shlex.join(self.argv)
        self.start_timeout = _start_timeout(start_timeout)
        if name is not None and not NAME_RE.match(name):
            raise UsageError(f"invalid plugin name {name!r} for MCP server {self.command!r}")
        self._name = name
        self._env, self._cwd = env, None if cwd is None else str(cwd)
        self.name = ""  # the plugin name, known once started
        self.server_name = ""  # serverInfo.name as the server sent it
        self.tools: list[Tool] = []
        self._conn: _Connection | None = None
        self._errlog: IO[str] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.tools]

    @property
    def running(self) -> bool:
        return self._conn is not None and self._conn.session is not None

    def start(self) -> Self:
        """Spawn, initialize, list the tools; McpServerError (after a clean shutdown) when
        any step fails or does not finish within `start_timeout`."""
        if self._conn is not None:
            raise UsageError(f"MCP server {self.command!r} was already started")
        # closed by the finalizer, with the connection
        self._errlog = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace")
        conn = _Connection(self.argv, self._env, self._cwd, self._errlog)
        self._conn = conn
        self._finalizer = weakref.finalize(self, _shutdown, conn, self._errlog)
        conn.start()
        try:
            info, listed = conn.ready.result(timeout=self.start_timeout)
        except concurrent.futures.TimeoutError:
            self._fail(f"did not finish starting within {self.start_timeout:g} s",
                       f"raise {TIMEOUT_ENV}")
        except BaseException as exc:  # noqa: BLE001 - anything the start raised, one line
            self._fail(f"failed to start: {describe(exc)}")
        self.server_name = getattr(getattr(info, "server_info", None), "name", "") or ""
        self.name = self._name or plugin_name(self.server_name, self.argv)
        try:
            self.tools = [self._tool(t) for t in listed]
            _check_unique(self.tools, self.command)
        except LocalAgentError as exc:
            self._fail(f"offers a tool that cannot be used: {exc.one_line()}")
        return self

    def _fail(self, what: str, hint: str | None = None) -> NoReturn:
        stderr = self._stderr_tail()
        self.close()
        raise McpServerError(f"MCP server {self.command!r} {what}",
                             hint=f"server stderr: {stderr}" if stderr else hint)

    def _stderr_tail(self) -> str:
        """The last line the server wrote on stderr (shortened), or ""."""
        if self._errlog is None or self._errlog.closed:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [ln.strip() for ln in self._errlog.read().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        last = lines[-1] if lines else ""
        return last if len(last) <= 200 else last[:197] + "..."

    def _tool(self, listed: Any) -> Tool:
        local = identifier(listed.name)
        returns, unwrap = unwrapped_returns(listed.output_schema)
        qualified = f"{self.name}.{local}"
        conn = self._conn
        assert conn is not None
        mcp_name = listed.name

        async def call(**kwargs: Any) -> Any:
            future = conn.call(mcp_name, kwargs, qualified)
            return result_value(await asyncio.wrap_future(future), qualified, unwrap)

        function = {"name": local, "description": listed.description or "",
                    "parameters": listed.input_schema, "returns": returns}
        return schema_tool(function, call, plugin=self.name,
                           side_effects=side_effects(listed.annotations))

    def close(self) -> None:
        """Stop the server (idempotent); its tools fail with McpToolError afterwards."""
        if self._finalizer is not None:
            self._finalizer()  # runs _shutdown once

    def __enter__(self) -> Self:
        return self if self._conn is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpServer({self.command!r}, plugin={self.name or '?'}, tools={len(self.tools)})"


def _shutdown(conn: _Connection, errlog: IO[str]) -> None:
    """The finalizer: stop the connection and drop the stderr file (never raises)."""
    try:
        conn.stop()
    finally:
        try:
            errlog.close()
        except OSError:
            pass


def _check_unique(tools: Sequence[Tool], command: str) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.qualified_name in seen:
            raise UsageError(f"two tools of {command!r} both map to {tool.qualified_name}")
        seen.add(tool.qualified_name)


class McpServers:
    """Several started servers, closed together (what `connect_servers` returns)."""

    def __init__(self, servers: Sequence[McpServer] = ()) -> None:
        self.servers = list(servers)

    @property
    def tools(self) -> list[Tool]:
        return [t for s in self.servers for t in s.tools]

    def close(self) -> None:
        """Stop every server, the last started first (idempotent)."""
        for server in reversed(self.servers):
            server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_servers(commands: Iterable[str | Sequence[str]], registry: ToolRegistry, *,
                    start_timeout: float | None = None) -> McpServers:
    """Start each server and add all their tools to `registry`, or none of them: when a
    server fails (McpServerError) or a name clashes (DuplicateFunctionError), every server
    started so far is stopped and the registry is left as it was."""
    group = McpServers()
    try:
        for command in commands:
            group.servers.append(McpServer(command, start_timeout=start_timeout).start())
        tools = group.tools
        seen: set[str] = set()
        for tool in tools:
            name = tool.qualified_name
            if name in registry or name in seen:
                raise DuplicateFunctionError(
                    f"duplicate function {name}: MCP servers are plugins named after the "
                    "server's own name, and this one is already registered",
                    hint="start two servers with different names, or use McpServer(name=...)")
            seen.add(name)
        for tool in tools:
            registry.add_tool(tool)
    except BaseException:
        group.close()
        raise
    return group
