"""The registry every planner and the executor share: functions by `Plugin.Function`.

It loads plugins (objects, modules, Python files, prompt directories), answers questions
about specs, validates and coerces arguments, and invokes functions. Invocation never
raises for a tool's own problems: unknown name, bad arguments, timeout, exception or an
unserializable value all come back as `ToolResult.error` (tool errors travel as data).

Timeouts: an async tool is cancelled; a sync tool runs in a daemon thread that Python
cannot kill, so on timeout the caller gets its result at once and the thread is left to
finish on its own (it never blocks the event loop or interpreter exit). An async tool that
blocks the event loop itself (e.g. `time.sleep` inside `async def`) cannot be timed out.
"""

from __future__ import annotations

import asyncio
import difflib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from localagent.errors import (
    DuplicateFunctionError,
    InvalidArgumentsError,
    LocalAgentError,
    PluginLoadError,
    UnknownFunctionError,
    UsageError,
)
from localagent.llm.base import LLM
from localagent.tools import plugins as _plugins
from localagent.tools.function import Tool
from localagent.tools.prompts import load_prompt_plugins
from localagent.tools.runtime import UnserializableValue, to_json_value
from localagent.tools.spec import ToolError, ToolResult, ToolSpec

__all__ = ["Tool", "ToolRegistry", "default_registry"]

LLMSource = LLM | Callable[[], LLM] | None


class ToolRegistry:
    """Functions by qualified name. `llm` (an LLM, a zero-argument factory, or None until
    set) is used by prompt functions only, resolved at their first call."""

    def __init__(self, llm: LLMSource = None) -> None:
        self.llm: LLMSource = llm
        self._tools: dict[str, Tool] = {}
        self._llm_lock = threading.Lock()  # serialises generations of prompt functions
        self._resolve_lock = threading.Lock()

    # --- adding -----------------------------------------------------------------------

    def add_tool(self, tool: Tool) -> None:
        self._add_all([tool])

    def add_function(
        self,
        func: Callable[..., Any],
        plugin: str,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> ToolSpec:
        """Register one function (decorated or not) under `plugin`."""
        tool = Tool.from_function(func, plugin=plugin, name=name, description=description)
        self._add_all([tool])
        return tool.spec

    def add_plugin(self, plugin: object, name: str | None = None) -> list[ToolSpec]:
        """A class instance, a class (instantiated with no arguments) or a module."""
        return self._add_all(_plugins.plugin_tools(plugin, name))

    def load(self, source: str | Path) -> list[ToolSpec]:
        """A .py file, a package directory, a prompt-plugin directory or a module name."""
        text = str(source)
        path = Path(text).expanduser()
        # A Path("mypkg") from a CLI option is still a module name when no such file exists.
        looks_like_path = path.exists() or text.endswith(".py") or "/" in text or "\\" in text
        if not looks_like_path:
            module = _plugins.import_module(text)
            return self._add_all(_plugins.module_plugin_tools(module, _plugins.module_stem(module)))
        if not path.exists():
            raise PluginLoadError(f"plugin path {path} does not exist")
        if path.is_file():
            if path.suffix != ".py":
                raise PluginLoadError(f"plugin file {path} is not a .py file or a directory")
            module = _plugins.import_file(path)
            return self._add_all(
                _plugins.module_plugin_tools(module, _plugins.file_plugin_name(path))
            )
        if (path / "__init__.py").is_file():
            module = _plugins.import_file(path)
            return self._add_all(
                _plugins.module_plugin_tools(module, _plugins.file_plugin_name(path))
            )
        return self._add_all(load_prompt_plugins(path, self.resolve_llm, self._llm_lock))

    def _add_all(self, tools: Sequence[Tool]) -> list[ToolSpec]:
        """All or nothing: a clash leaves the registry as it was."""
        seen: set[str] = set()
        for tool in tools:
            name = tool.qualified_name
            if name in self._tools or name in seen:
                raise DuplicateFunctionError(
                    f"duplicate function {name}: a function with this name is already registered",
                    hint="load the plugin under another name",
                )
            seen.add(name)
        for tool in tools:
            self._tools[tool.qualified_name] = tool
        return [tool.spec for tool in tools]

    # --- looking up ---------------------------------------------------------------------

    def __contains__(self, qualified_name: object) -> bool:
        return qualified_name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def get(self, qualified_name: str) -> Tool:
        try:
            return self._tools[qualified_name]
        except (KeyError, TypeError):
            raise self._unknown(qualified_name) from None

    def spec(self, qualified_name: str) -> ToolSpec:
        return self.get(qualified_name).spec

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        """Specs sorted by qualified name; all of them, or the named ones."""
        chosen = (
            self._tools.keys() if names is None else {self.get(n).qualified_name for n in names}
        )
        return [self._tools[n].spec for n in sorted(chosen)]

    def _unknown(self, name: object) -> UnknownFunctionError:
        from localagent.tools.examples import EXAMPLE_PLUGINS

        suggestions = suggest(str(name), list(self._tools))
        message = f"unknown function {name!r}"
        plugin = str(name).split(".")[0]
        loaded = {n.split(".")[0] for n in self._tools}
        if plugin in {cls.__name__ for cls in EXAMPLE_PLUGINS} - loaded:
            return UnknownFunctionError(
                message, hint="an example plugin: offered only with --examples (examples=True)")
        if suggestions:
            return UnknownFunctionError(f"{message}; did you mean {', '.join(suggestions)}?")
        return UnknownFunctionError(message, hint="`localagent tools list` shows every function")

    def resolve_llm(self) -> LLM:
        """The model for prompt functions; a factory is called once, on first need."""
        with self._resolve_lock:
            if isinstance(self.llm, LLM):
                return self.llm
            if callable(self.llm):
                model = self.llm()
                if not isinstance(model, LLM):
                    raise UsageError(f"the registry's llm factory returned {type(model).__name__}")
                self.llm = model
                return model
        raise UsageError("prompt functions need a model: set ToolRegistry.llm")

    # --- calling ------------------------------------------------------------------------

    def validate_args(self, qualified_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Coerced arguments (defaults filled in); InvalidArgumentsError lists every problem."""
        return self.get(qualified_name).validator(args)

    async def ainvoke(
        self, qualified_name: str, args: Mapping[str, Any], *, timeout: float | None = None
    ) -> ToolResult:
        start = time.perf_counter()

        def failed(
            kind: Any, exc: BaseException, shown: dict[str, Any], msg: str = ""
        ) -> ToolResult:
            message = msg or (
                exc.one_line() if isinstance(exc, LocalAgentError) else _describe(exc)
            )
            return ToolResult(
                function=qualified_name,
                args=shown,
                error=ToolError(kind, message, exc),
                seconds=time.perf_counter() - start,
            )

        shown = _jsonable_args(args)
        try:
            tool = self.get(qualified_name)
            kwargs = tool.validator(args)
        except UnknownFunctionError as exc:
            return failed("unknown_function", exc, shown)
        except InvalidArgumentsError as exc:
            return failed("invalid_arguments", exc, shown)
        shown = _jsonable_args(kwargs)
        task = asyncio.ensure_future(tool.call(kwargs))
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_swallow)
            exc = TimeoutError(f"{qualified_name} did not finish within {timeout:g} s")
            return failed("timeout", exc, shown, str(exc))
        try:
            value = to_json_value(task.result())
        except UnserializableValue as exc:
            return failed("unserializable", exc, shown, f"{qualified_name} returned {exc}")
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the tool's own failure, as data
            return failed("exception", exc, shown)
        return ToolResult(
            function=qualified_name, args=shown, value=value, seconds=time.perf_counter() - start
        )

    def invoke(
        self, qualified_name: str, args: Mapping[str, Any], *, timeout: float | None = None
    ) -> ToolResult:
        """`ainvoke` for synchronous callers (inside a running loop, on a helper thread)."""
        coro_factory = lambda: self.ainvoke(qualified_name, args, timeout=timeout)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro_factory())
        box: dict[str, ToolResult] = {}
        thread = threading.Thread(target=lambda: box.setdefault("r", asyncio.run(coro_factory())))
        thread.start()
        thread.join()
        return box["r"]


def default_registry(
    plugins: Sequence[str | Path | object] = (),
    *,
    llm: LLMSource = None,
    examples: bool = False,
) -> ToolRegistry:
    """Built-ins always; the example plugins (fixed demo data) only when `examples`; then
    each given plugin."""
    from localagent.tools.builtins import BUILTIN_PLUGINS
    from localagent.tools.examples import EXAMPLE_PLUGINS

    registry = ToolRegistry(llm)
    for cls in BUILTIN_PLUGINS:
        registry.add_plugin(cls)
    if examples:
        for cls in EXAMPLE_PLUGINS:
            registry.add_plugin(cls)
    for plugin in plugins:
        if isinstance(plugin, (str, Path)):
            registry.load(plugin)
        else:
            registry.add_plugin(plugin)
    return registry


def suggest(name: str, names: Sequence[str], n: int = 3) -> list[str]:
    """Qualified names whose function part is close to the one asked for (`GetInvoce`,
    `MathPlugin.GetInvoice`), best first; ties broken by the whole name."""
    wanted = name.lower()
    wanted_function = wanted.rsplit(".", 1)[-1]
    scored = []
    for qualified in names:
        function = qualified.rsplit(".", 1)[-1].lower()
        score = difflib.SequenceMatcher(None, wanted_function, function).ratio()
        if score >= 0.6:
            whole = difflib.SequenceMatcher(None, wanted, qualified.lower()).ratio()
            scored.append((-score, -whole, qualified))
    return [q for *_, q in sorted(scored)[:n]]


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _jsonable_args(args: Any) -> dict[str, Any]:
    if not isinstance(args, Mapping):
        return {}
    try:
        value = to_json_value(dict(args))
    except UnserializableValue:
        return {str(k): repr(v) for k, v in args.items()}
    return value if isinstance(value, dict) else {}


def _swallow(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
