"""Run one localagent planner over schema-described tools and collect the calls it made.

The tools are recording stubs (`call` given per function, or a `RecordingStub`): the
external benchmarks judge which calls a planner makes, not what they return. Only the
benchmark's functions are offered (no built-ins), as to the raw baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from localagent.bench.checks import calls_of
from localagent.llm.base import LLM
from localagent.planners.base import PlannerSettings
from localagent.planners.techniques import Techniques
from localagent.tools import RecordingStub, schema_tool
from localagent.tools.registry import ToolRegistry


@dataclass(frozen=True)
class AgentCalls:
    calls: tuple[tuple[str, dict[str, Any]], ...]  # (original function name, args)
    answer: Any
    error: str | None
    trace: dict[str, Any]


def registry_for(tools: Sequence[dict[str, Any]],
                 call_for: Callable[[str], Callable[..., Any]] | None = None
                 ) -> tuple[ToolRegistry, dict[str, str]]:
    """A registry of `tools` (OpenAI schemas) and, per qualified name, the name the
    benchmark gives the function. `call_for(name)`: the stub behind a function (default:
    one `RecordingStub`)."""
    registry = ToolRegistry()
    stub = RecordingStub()
    back: dict[str, str] = {}
    for schema in tools:
        name = schema["function"]["name"]
        tool = schema_tool(schema, call_for(name) if call_for else stub)
        back[tool.qualified_name] = name
        registry.add_tool(tool)
    return registry, back


def agent_calls(llm: LLM, tools: Sequence[dict[str, Any]], goal: str, planner: str, *,
                techniques: Techniques | None = None, max_iterations: int = 3,
                call_for: Callable[[str], Callable[..., Any]] | None = None) -> AgentCalls:
    """Plan and run `goal` with `planner` over `tools` (OpenAI schemas); every finished
    call, in order, named as the benchmark names it. `call_for(name)`: the stub behind a
    function (default: one `RecordingStub`)."""
    from localagent.agent import Agent

    registry, back = registry_for(tools, call_for)
    agent = Agent(llm, registry=registry, settings=PlannerSettings(techniques=techniques))
    result = agent.run(goal, planner=planner, max_iterations=max_iterations)
    trace = result.to_dict()
    calls = tuple((back.get(str(c.get("function")), str(c.get("function"))),
                   dict(c.get("args") or {}))
                  for c in calls_of(trace) if c.get("function"))
    return AgentCalls(calls=calls, answer=result.answer, error=result.error, trace=trace)
