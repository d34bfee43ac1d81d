"""The data-only description of a function, apart from the callable.

Retrieval (embedding text, content hash), grammars (argument and return schemas) and
prompts (manuals) see only `ToolSpec`; only the registry holds callables. This is
pydantic-ai's `ToolDefinition` idea.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ToolSpec:
    plugin: str
    name: str
    description: str
    # JSON Schema of the arguments: {"type": "object", "properties": {...},
    # "required": [...], "additionalProperties": false}. Derived once by pydantic.
    parameters: dict[str, Any] = field(hash=False, compare=True)
    # JSON Schema of the return value ({} when unknown).
    returns: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)
    kind: Literal["native", "prompt"] = "native"
    # True when a call changes something outside the run (sends, writes, pays, deletes):
    # such a call runs at most once per distinct call in a run and only after approval.
    # Not part of `content_hash`: the model and the index see the same tool either way.
    side_effects: bool = False

    @property
    def qualified_name(self) -> str:
        return f"{self.plugin}.{self.name}"

    @property
    def name_words(self) -> list[str]:
        """The function's name as lowercase words: `TrimEnd` / `trim_end` -> trim, end."""
        return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", self.name)]

    @property
    def content_hash(self) -> str:
        """Changes whenever anything a model or an index sees changes."""
        payload = json.dumps(
            [self.qualified_name, self.description, self.parameters, self.returns],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def embedding_text(self) -> str:
        """What the retrieval index embeds: name, description and argument descriptions."""
        args = [
            f"{name}: {prop.get('description', '')}".strip()
            for name, prop in self.parameters.get("properties", {}).items()
        ]
        return f"{self.qualified_name}: {self.description}" + (
            " Args: " + "; ".join(args) if args else ""
        )


@dataclass(frozen=True)
class ToolError:
    """A failure of one call, carried as data (the caller never crashes)."""

    kind: Literal["invalid_arguments", "unknown_function", "timeout", "exception",
                  "unserializable", "refused"]  # refused: a side-effect call not approved
    message: str
    # The exception behind the error, when there was one (kept for callers such as the CLI
    # that map typed errors to exit codes); not part of equality or repr.
    exception: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ToolResult:
    function: str
    args: dict[str, Any]
    value: Any = None
    error: ToolError | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None
