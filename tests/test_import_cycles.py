"""No two modules of the package import each other, directly or through others.

Every import counts: at module level, inside a function, and under `TYPE_CHECKING`, since
each of them is a dependency a reader has to keep in mind (an import hidden in a function
is still a cycle; it only fails later). Read with `ast`, nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "localagent"

# Cycles known and owned elsewhere; each entry is one cycle's modules. Remove an entry
# when its cycle is gone (the test then keeps it gone).
KNOWN: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (`from pkg import submodule` names the
    submodule; a module's own package `__init__` is not counted as a dependency)."""
    modules = _modules()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                found = owner(target)
                if found and found != module:
                    graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_counts_imports_inside_functions_and_under_type_checking() -> None:
    graph = import_graph()
    assert "localagent.plan_check" in graph["localagent.plan"]
    assert "localagent.grammar.covering" in graph["localagent.grammar.tree"]
    assert "localagent.agent" in graph["localagent"]  # imported inside __getattr__


def test_no_import_cycles() -> None:
    new = [sorted(c) for c in cycles(import_graph()) if c not in KNOWN]
    assert new == [], f"import cycles: {new}"


def test_public_names_of_localagent_tools_are_not_shadowed_by_submodules() -> None:
    """Importing a submodule sets it as an attribute of its package; a submodule named
    like a public name (`tools/tool.py` next to `@tool`) would replace that name, and
    `from localagent.tools import tool` would give a module."""
    import importlib
    import pkgutil
    import types

    import localagent.tools as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"localagent.tools.{info.name}")
    for name in package.__all__:
        assert not isinstance(getattr(package, name), types.ModuleType), name
