"""Find the `@tool` functions of a plugin: an object, a class, a module or a Python file.

Rules: a class instance is a plugin named after its class; a class is
instantiated with no arguments; a module's own `@tool` functions form one plugin named
after the module (a file: after its stem), and loading a module or file also turns each
of its classes with `@tool` methods into a plugin named after the class.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType

from localagent.errors import PluginLoadError
from localagent.tools.decorator import marker_of
from localagent.tools.function import Tool


def plugin_tools(plugin: object, name: str | None = None) -> list[Tool]:
    """Tools of one plugin: a module's functions, or a class's (or instance's) methods."""
    if isinstance(plugin, ModuleType):
        plugin_name = name or _identifier(plugin.__name__.rsplit(".", 1)[-1])
        tools = module_function_tools(plugin, plugin_name)
        where = f"module {plugin.__name__}"
    else:
        instance = instantiate(plugin) if inspect.isclass(plugin) else plugin
        plugin_name = name or type(instance).__name__
        tools = method_tools(instance, plugin_name)
        where = f"plugin {plugin_name}"
    if not tools:
        raise PluginLoadError(f"{where} has no @tool functions")
    return tools


def instantiate(cls: type) -> object:
    try:
        return cls()
    except Exception as exc:  # noqa: BLE001 - any failure of user code is a load error
        raise PluginLoadError(
            f"cannot create plugin {cls.__name__} with no arguments: {type(exc).__name__}: {exc}"
        ) from None


def method_tools(instance: object, plugin_name: str) -> list[Tool]:
    tools = []
    cls = type(instance)
    for attr in sorted(dir(cls)):
        try:
            raw = inspect.getattr_static(cls, attr)
        except AttributeError:
            continue
        marker = marker_of(raw)
        if marker is None:
            continue
        tools.append(Tool.from_function(getattr(instance, attr), plugin=plugin_name))
    return sorted(tools, key=lambda t: t.qualified_name)


def module_function_tools(module: ModuleType, plugin_name: str) -> list[Tool]:
    """The module's own `@tool` functions (not ones it merely imported)."""
    tools = [
        Tool.from_function(obj, plugin=plugin_name)
        for obj in vars(module).values()
        if inspect.isroutine(obj)
        and marker_of(obj) is not None
        and getattr(obj, "__module__", None) == module.__name__
    ]
    return sorted(tools, key=lambda t: t.qualified_name)


def module_plugin_tools(module: ModuleType, plugin_name: str) -> list[Tool]:
    """Everything a module offers: each tool class as a plugin, plus its own functions."""
    tools: list[Tool] = []
    for _, obj in sorted(vars(module).items()):
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and _has_tools(obj):
            tools.extend(method_tools(instantiate(obj), obj.__name__))
    tools.extend(module_function_tools(module, plugin_name))
    if not tools:
        raise PluginLoadError(f"{_where(module)} has no @tool functions or plugin classes")
    return tools


def _has_tools(cls: type) -> bool:
    for attr in dir(cls):
        try:
            if marker_of(inspect.getattr_static(cls, attr)) is not None:
                return True
        except AttributeError:
            continue
    return False


def _where(module: ModuleType) -> str:
    file = getattr(module, "__file__", None)
    return f"plugin file {file}" if file else f"module {module.__name__}"


def import_file(path: Path) -> ModuleType:
    """Import a .py file (or a package directory) under a private module name."""
    path = path.resolve()
    init = path / "__init__.py" if path.is_dir() else path
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    module_name = f"localagent_plugin_{_identifier(path.stem)}_{digest}"
    locations = [str(path)] if path.is_dir() else None
    spec = importlib.util.spec_from_file_location(
        module_name, init, submodule_search_locations=locations
    )
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot import plugin file {path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pydantic look their module up here
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code may raise anything
        sys.modules.pop(module_name, None)
        raise PluginLoadError(f"cannot import plugin file {init}: {_describe(exc)}") from None
    return module


def import_module(name: str) -> ModuleType:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        raise PluginLoadError(f"no plugin file, directory or module named {name!r}")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise PluginLoadError(f"no plugin file, directory or module named {name!r}") from None
        raise PluginLoadError(f"cannot import plugin module {name}: {_describe(exc)}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code may raise anything
        raise PluginLoadError(f"cannot import plugin module {name}: {_describe(exc)}") from None


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _identifier(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return f"_{name}" if name[:1].isdigit() else name


def file_plugin_name(path: Path) -> str:
    return _identifier(path.resolve().stem)


def module_stem(module: ModuleType) -> str:
    return _identifier(module.__name__.rsplit(".", 1)[-1])
