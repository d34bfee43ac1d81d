"""Describe functions to a model: a text manual for prompts, or OpenAI tool schemas.

Both are rendered from the same `ToolSpec`s, so a prompt and a chat template never
disagree about what a function takes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from localagent.grammar.types import DECLARED
from localagent.tools.spec import ToolSpec

HEADER = "[AVAILABLE FUNCTIONS]"
FOOTER = "[END AVAILABLE FUNCTIONS]"


def render_manual(specs: Sequence[ToolSpec]) -> str:
    """The "[AVAILABLE FUNCTIONS]" manual: one block per function, args one per line.

    Example block::

        DemoPlugin.GetInvoice
          description: Get the invoice amount (a number) of a company.
          args:
            - company (string, one of "A", "B", ...; required): The company's letter ...
          returns: integer
    """
    blocks = [render_function(spec) for spec in specs]
    return "\n\n".join([HEADER, *blocks, FOOTER])


def render_function(spec: ToolSpec) -> str:
    lines = [spec.qualified_name, f"  description: {spec.description or '(none)'}"]
    properties: dict[str, Any] = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    if properties:
        lines.append("  args:")
        for name, schema in properties.items():
            lines.append(f"    - {render_arg(name, schema, name in required)}")
    else:
        lines.append("  args: none")
    lines.append(f"  returns: {type_label(spec.returns) if spec.returns else 'unknown'}")
    return "\n".join(lines)


def render_arg(name: str, schema: dict[str, Any], required: bool) -> str:
    """`name (type; required): description`."""
    description = schema.get("description", "")
    return arg_label(name, schema, required) + (f": {description}" if description else "")


def arg_label(name: str, schema: dict[str, Any], required: bool) -> str:
    """`name (type; required)` or `name (type; default 1)`, without the description."""
    facts = [type_label(schema)]
    if required:
        facts.append("required")
    elif "default" in schema:
        facts.append(f"default {json.dumps(schema['default'])}")
    else:
        facts.append("optional")
    return f"{name} ({'; '.join(facts)})"


def listed_values(schema: dict[str, Any]) -> list[Any] | None:
    """The values the manual lists for an argument ('one of "A", "B"'), or None when it
    lists none: no enum, an enum narrowed to nothing, or an open number narrowed by
    `mentions` to the goal's numbers and a few constants (listing them, "one of 0, 1, ...
    1000000", reads as a menu, and the default model then fills add(1000000, 1000000)
    instead of looking up)."""
    if not schema.get("enum") or schema.get(DECLARED, ...) is None:
        return None
    return list(schema["enum"])


def type_label(schema: dict[str, Any]) -> str:
    """A short human label for a JSON schema: 'string', 'list of number', 'one of "A", "B"'."""
    if "enum" in schema:
        values = listed_values(schema)
        if values is not None:
            return "one of " + ", ".join(json.dumps(v) for v in values)
        if not schema["enum"]:  # narrowed to nothing by the planner's `mentions` technique
            return "the result of another function"
        return str(schema.get("type", "number"))  # an open number narrowed (listed_values)
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            label = " or ".join(type_label(s) for s in options) or "null"
            return f"{label} or null" if len(options) < len(schema[key]) else label
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"list of {type_label(items)}" if items else "list"
    if kind == "object" and "properties" in schema:
        fields = ", ".join(f"{k}: {type_label(v)}" for k, v in schema["properties"].items())
        return f"object {{{fields}}}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


def openai_tools(specs: Sequence[ToolSpec], *, separator: str = ".") -> list[dict[str, Any]]:
    """OpenAI function-tool schemas; the function name is the qualified name.

    OpenAI's own API restricts names to `[a-zA-Z0-9_-]`; pass `separator="_"` or `"-"`
    for such a consumer (local chat templates accept the dot).
    """
    return [
        {
            "type": "function",
            "function": {
                "name": f"{spec.plugin}{separator}{spec.name}",
                "description": spec.description,
                "parameters": spec.parameters,
            },
        }
        for spec in specs
    ]
