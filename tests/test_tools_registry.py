"""The registry: plugins from objects, modules and files; invocation as data; timeouts."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from localagent import tool
from localagent.errors import (
    DuplicateFunctionError,
    InvalidArgumentsError,
    PluginLoadError,
    UnknownFunctionError,
)
from localagent.tools.registry import ToolRegistry, default_registry

RELEASE = threading.Event()


class Counter:
    """A plugin with sync and async methods."""

    def __init__(self) -> None:
        self.calls = 0

    @tool
    def bump(self, by: int = 1) -> int:
        """Add to the counter."""
        self.calls += by
        return self.calls

    @tool(name="Slow")
    async def slow(self, seconds: float) -> str:
        """Sleep, asynchronously."""
        await asyncio.sleep(seconds)
        return "done"

    @tool
    def blocking(self, seconds: float) -> str:
        """Sleep in the worker thread."""
        time.sleep(seconds)
        return "done"

    @tool
    def hang(self) -> str:
        """Block until the test releases it (a sync tool that ignores its timeout)."""
        RELEASE.wait(timeout=120)
        return "released"

    @tool
    def fail(self) -> int:
        """Always raises."""
        raise RuntimeError("boom")

    @tool
    def weird(self) -> object:
        """Returns something with no JSON form."""
        return object()

    @tool
    def when(self) -> dt.date:
        return dt.date(2025, 1, 2)

    @tool
    def thread_name(self) -> str:
        return threading.current_thread().name

    def not_a_tool(self) -> int:
        return 0


def test_add_plugin_instance_class_and_names() -> None:
    registry = ToolRegistry()
    specs = registry.add_plugin(Counter)
    assert [s.name for s in specs] == sorted(s.name for s in specs)
    assert "Counter.Slow" in registry and "Counter.bump" in registry
    assert "Counter.not_a_tool" not in registry
    registry.add_plugin(Counter(), name="Other")
    assert "Other.bump" in registry
    assert [s.qualified_name for s in registry.specs()] == sorted(registry.names())
    assert [s.name for s in registry.specs(["Other.bump", "Counter.fail"])] == ["fail", "bump"]


def test_sync_and_async_results_and_threads() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Counter())
    assert registry.invoke("Counter.bump", {"by": "5"}).value == 5
    result = registry.invoke("Counter.Slow", {"seconds": 0.01})
    assert result.ok and result.value == "done" and result.args == {"seconds": 0.01}
    assert registry.invoke("Counter.when", {}).value == "2025-01-02"
    name = registry.invoke("Counter.thread_name", {}).value
    assert name != threading.current_thread().name  # sync tools run off the caller's thread


def test_tool_problems_come_back_as_data() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Counter())
    boom = registry.invoke("Counter.fail", {})
    assert boom.error is not None and boom.error.kind == "exception"
    assert "RuntimeError: boom" in boom.error.message
    assert isinstance(boom.error.exception, RuntimeError)
    weird = registry.invoke("Counter.weird", {})
    assert weird.error is not None and weird.error.kind == "unserializable"
    unknown = registry.invoke("Counter.bumb", {})
    assert unknown.error is not None and unknown.error.kind == "unknown_function"
    assert "Counter.bump" in unknown.error.message
    bad = registry.invoke("Counter.bump", {"by": "lots", "extra": 1})
    assert bad.error is not None and bad.error.kind == "invalid_arguments"
    assert "'by'" in bad.error.message and "'extra'" in bad.error.message
    not_a_mapping = registry.invoke("Counter.bump", ["by", 1])  # type: ignore[arg-type]
    assert not_a_mapping.error is not None and not_a_mapping.error.kind == "invalid_arguments"


def test_timeouts_async_and_sync_do_not_block() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Counter())
    result = registry.invoke("Counter.Slow", {"seconds": 30}, timeout=0.05)
    assert result.error is not None and result.error.kind == "timeout"
    result = registry.invoke("Counter.hang", {}, timeout=0.05)
    assert result.error is not None and result.error.kind == "timeout"
    assert "within 0.05 s" in result.error.message
    # We got the result while the tool's thread is still blocked: nobody waited for it,
    # and it is a daemon thread, so it cannot block interpreter exit either.
    hung = [t for t in threading.enumerate() if t.name.startswith("localagent-tool-hang")]
    assert hung and all(t.daemon and t.is_alive() for t in hung) and not RELEASE.is_set()
    RELEASE.set()
    for thread in hung:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in hung)


def test_parallel_invocations_on_one_loop() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Counter())

    async def run() -> list[str]:
        results = await asyncio.gather(
            *(registry.ainvoke("Counter.blocking", {"seconds": 0.2}) for _ in range(5)),
            *(registry.ainvoke("Counter.Slow", {"seconds": 0.2}) for _ in range(5)),
        )
        return [r.value for r in results]

    assert asyncio.run(run()) == ["done"] * 10


def test_invoke_inside_a_running_loop() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Counter())

    async def inside() -> int:
        return registry.invoke("Counter.bump", {}).value

    assert asyncio.run(inside()) == 1


def test_duplicate_names_are_rejected_atomically() -> None:
    registry = ToolRegistry()
    registry.add_plugin(Counter())
    before = registry.names()
    with pytest.raises(DuplicateFunctionError, match=r"duplicate function Counter\.\w+"):
        registry.add_plugin(Counter())
    assert registry.names() == before

    @tool
    def bump() -> int:
        return 0

    with pytest.raises(DuplicateFunctionError):
        registry.add_function(bump, "Counter")


def test_unknown_function_suggests_close_names() -> None:
    registry = default_registry(examples=True)
    with pytest.raises(UnknownFunctionError, match="did you mean DemoPlugin.GetInvoice"):
        registry.spec("DemoPlugin.GetInvoce")
    with pytest.raises(UnknownFunctionError, match="DemoPlugin.GetInvoice"):
        registry.validate_args("GetInvoice", {})
    with pytest.raises(InvalidArgumentsError, match="missing argument 'company'"):
        registry.validate_args("DemoPlugin.GetInvoice", {})


def test_plugin_file_classes_and_functions(tmp_path: Path) -> None:
    source = tmp_path / "my_tools.py"
    source.write_text(
        textwrap.dedent('''
        from localagent import tool
        from localagent.tools.examples import DemoPlugin  # imported: must not be re-added

        class Shop:
            @tool(name="Price")
            def price(self, item: str) -> float:
                """The price of an item."""
                return {"apple": 0.5}.get(item, 1.0)

        class NoTools:
            def helper(self): ...

        @tool
        def shout(text: str) -> str:
            """Shout a text."""
            return text.upper() + "!"

        def not_a_tool(): ...
    ''')
    )
    registry = ToolRegistry()
    names = {s.qualified_name for s in registry.load(source)}
    assert names == {"Shop.Price", "my_tools.shout"}
    assert registry.invoke("my_tools.shout", {"text": "hi"}).value == "HI!"
    assert registry.invoke("Shop.Price", {"item": "apple"}).value == 0.5


def test_module_and_package_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "pkgtools"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from localagent import tool\n\n@tool\ndef ping() -> str:\n    return 'pong'\n"
    )
    registry = ToolRegistry()
    assert [s.qualified_name for s in registry.load(package)] == ["pkgtools.ping"]
    monkeypatch.syspath_prepend(str(tmp_path))
    other = ToolRegistry()
    assert [s.qualified_name for s in other.load("pkgtools")] == ["pkgtools.ping"]
    assert other.invoke("pkgtools.ping", {}).value == "pong"
    sys.modules.pop("pkgtools", None)
    from localagent.tools.examples import demo

    third = ToolRegistry()
    third.add_plugin(demo.DemoPlugin)
    assert third.invoke("DemoPlugin.GetInvoice", {"company": "C"}).value == 20000


def test_plugin_load_errors_say_which_file_and_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import not_a_real_module_xyz\n")
    with pytest.raises(PluginLoadError) as info:
        ToolRegistry().load(broken)
    line = info.value.one_line()
    assert str(broken) in line and "not_a_real_module_xyz" in line and "\n" not in line
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    with pytest.raises(PluginLoadError, match="SyntaxError"):
        ToolRegistry().load(syntax)
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(PluginLoadError, match="no @tool"):
        ToolRegistry().load(empty)
    with pytest.raises(PluginLoadError, match="does not exist"):
        ToolRegistry().load(tmp_path / "missing.py")
    with pytest.raises(PluginLoadError, match="no plugin file, directory or module"):
        ToolRegistry().load("no_such_module_xyz")
    needs_args = tmp_path / "needs_args.py"
    needs_args.write_text(
        "from localagent import tool\nclass P:\n    def __init__(self, x): ...\n"
        "    @tool\n    def f(self) -> int:\n        return 1\n"
    )
    with pytest.raises(PluginLoadError, match="no arguments"):
        ToolRegistry().load(needs_args)


def test_default_registry_contents() -> None:
    registry = default_registry(examples=True)
    for name in (
        "TextPlugin.uppercase",
        "TextPlugin.concat",
        "MathPlugin.Calculator",
        "MathPlugin.power",
        "TimePlugin.add_days",
        "DemoPlugin.GetInvoice",
        "DemoPlugin.Diff",
        "DemoPlugin.Total",
        "PersonalAssistant.GetPersonAge",
        "WeatherPlugin.DidItRainToday",
        "CurrencyPlugin.ConvertCurrency",
    ):
        assert name in registry, name
    bare = default_registry(examples=False)
    assert "DemoPlugin.GetInvoice" not in bare and "MathPlugin.add" in bare
    assert all(s.description for s in registry.specs())


def test_example_plugins_only_when_asked_or_named() -> None:
    """By default (the registry `localagent run` and `Agent()` use) no example plugin is
    offered, so a weather question is never answered from the demo data."""
    from localagent.agent import Agent
    from localagent.tools.examples import EXAMPLE_PLUGINS, WeatherPlugin

    examples = tuple(f"{cls.__name__}." for cls in EXAMPLE_PLUGINS)
    for registry in (default_registry(), Agent().registry):
        assert "MathPlugin.add" in registry and "TextPlugin.uppercase" in registry
        assert not [n for n in registry.names() if n.startswith(examples)]
        with pytest.raises(UnknownFunctionError) as unknown:
            registry.spec("WeatherPlugin.GetWeather")
        assert "only with --examples" in unknown.value.one_line()
    assert "WeatherPlugin.GetWeather" in Agent(examples=True).registry
    named = default_registry([WeatherPlugin])  # naming an example plugin loads it
    assert "WeatherPlugin.GetWeather" in named and "DemoPlugin.GetInvoice" not in named
