"""The tool kernel: `@tool`, schema tools, plugins, prompt functions, built-ins and the
registry.

Names are imported lazily so `import localagent.tools` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "RecordingStub",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "default_registry",
    "openai_tools",
    "render_manual",
    "schema_tool",
    "schema_tools",
    "tool",
]

_WHERE = {
    "tool": "localagent.tools.decorator",
    "Tool": "localagent.tools.function",
    "ToolRegistry": "localagent.tools.registry",
    "default_registry": "localagent.tools.registry",
    "ToolSpec": "localagent.tools.spec",
    "ToolResult": "localagent.tools.spec",
    "ToolError": "localagent.tools.spec",
    "render_manual": "localagent.tools.manual",
    "openai_tools": "localagent.tools.manual",
    "schema_tool": "localagent.tools.from_schema",
    "schema_tools": "localagent.tools.from_schema",
    "RecordingStub": "localagent.tools.recording_stub",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
