"""localagent: plan and act with local GGUF models, offline."""

from __future__ import annotations

from typing import Any

from localagent.offline import enforce_offline

enforce_offline()

__all__ = ["Agent", "Conversation", "RecordingStub", "schema_tool", "schema_tools", "tool"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Lazy: `import localagent` must stay cheap (the CLI imports it for `--help`).
    if name == "tool":
        from localagent.tools.decorator import tool

        return tool
    if name in ("schema_tool", "schema_tools", "RecordingStub"):
        from localagent.tools import from_schema

        return getattr(from_schema, name)
    if name == "Agent":
        from localagent.agent import Agent

        return Agent
    if name == "Conversation":
        from localagent.conversation import Conversation

        return Conversation
    raise AttributeError(name)
