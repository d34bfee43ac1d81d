"""The tools a benchmark task offers: its plugins, minus exclusions, plus distractors.

Each task gets its own registry with only the plugins it names (as Semantic Kernel's
samples load only their own plugins), so a run measures the planner, not a prompt bloated
by unrelated functions, unless the task asks for distractors: then unrelated functions
from the retrieval benchmark's catalog (545 tools in 37 plugins, several close in meaning
to ours: `banking`, `accounting`, `weather`, `math`) are added, and filtering matters.
A distractor can be planned with but fails when called (a tool-call error in the report).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from localagent.bench.suite import Task
from localagent.errors import UsageError
from localagent.llm.base import LLM
from localagent.tools.function import Tool
from localagent.tools.registry import ToolRegistry
from localagent.tools.spec import ToolSpec


def known_plugins() -> dict[str, Any]:
    """Plugin names a suite may use without a path: built-ins, examples, prompt samples."""
    from localagent.samples import PROMPT_PLUGINS_DIR
    from localagent.tools.builtins import BUILTIN_PLUGINS
    from localagent.tools.examples import EXAMPLE_PLUGINS, WeatherPlugin

    known: dict[str, Any] = {cls.__name__: cls for cls in (*BUILTIN_PLUGINS, *EXAMPLE_PLUGINS)}
    known["WeatherPlugin:rain"] = lambda: WeatherPlugin("rain")
    known["WeatherPlugin:dry"] = lambda: WeatherPlugin("dry")
    known["WeatherPlugin"] = known["WeatherPlugin:rain"]  # fixed, whatever the environment
    for folder in sorted(PROMPT_PLUGINS_DIR.iterdir()):
        if folder.is_dir():
            known[folder.name] = folder
    return known


def build_registry(task: Task, llm: LLM | None = None) -> ToolRegistry:
    """A registry with the task's plugins (minus `exclude`) and its distractors."""
    registry = ToolRegistry(llm)
    known = known_plugins()
    for name in task.plugins:
        source = known.get(name)
        if source is None:
            path = task.base_dir / name
            registry.load(path if path.exists() else name)
        elif isinstance(source, Path):
            registry.load(source)
        elif isinstance(source, type):
            registry.add_plugin(source)
        else:
            registry.add_plugin(source(), name.split(":")[0])
    if task.exclude:
        missing = [n for n in task.exclude if n not in registry]
        if missing:
            raise UsageError(f"task {task.id!r} excludes unknown function(s) {', '.join(missing)}")
        registry = _without(registry, set(task.exclude), llm)
    for spec in pick_distractors(task.id, task.distractors, registry):
        registry.add_tool(distractor_tool(spec))
    return registry


def _without(registry: ToolRegistry, names: set[str], llm: LLM | None) -> ToolRegistry:
    kept = ToolRegistry(llm)
    for name in registry.names():
        if name not in names:
            kept.add_tool(registry.get(name))
    return kept


@lru_cache(maxsize=1)
def _catalog() -> tuple[ToolSpec, ...]:
    from localagent.retrieval.dataset import load_tools

    return tuple(load_tools())


def pick_distractors(task_id: str, count: int, registry: ToolRegistry) -> list[ToolSpec]:
    """`count` catalog tools chosen by a generator seeded with the task id: the same task
    always gets the same distractors, whatever else runs."""
    if count <= 0:
        return []
    pool = [s for s in _catalog() if s.qualified_name not in registry]
    if count > len(pool):
        raise UsageError(
            f"task {task_id!r} asks for {count} distractors; the catalog has {len(pool)}"
        )
    return sorted(random.Random(task_id).sample(pool, count), key=lambda s: s.qualified_name)


def distractor_tool(spec: ToolSpec) -> Tool:
    """A tool with the catalog's description whose call always fails."""

    def validate(args: Mapping[str, Any]) -> dict[str, Any]:
        return dict(args)

    async def call(args: dict[str, Any]) -> Any:
        raise RuntimeError(f"{spec.qualified_name} is a distractor: it is not available here")

    return Tool(spec=spec, validator=validate, call=call)
