"""Prompt-side descriptions of each output format, for generation with or without a grammar.

Without a constraint (`constraint=None`, to measure what the grammar adds) the prompt is
all the model has; with one, the same text still helps the model choose well, since the
grammar forces form, not sense (DESIGN.md section 4).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from localagent.grammar.common import HERMES, CallFormat
from localagent.grammar.types import DECLARED, value_type
from localagent.tools.spec import ToolSpec


def _type(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "enum" in schema and DECLARED in schema and (
            schema[DECLARED] is None or not schema["enum"]):
        # narrowed by a planner (`mentions`): an open number, or a key that must be
        # looked up; the grammar holds the admitted values, the prompt the plain type
        return str(schema.get("type", "any"))
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            return " | ".join(_type(s) for s in schema[combo])
    t = schema.get("type", "any")
    if t == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    return " | ".join(t) if isinstance(t, list) else str(t)


def signature(tool: ToolSpec) -> str:
    """`P.F(a: number, b?: string) -> number: description` (? marks optional arguments)."""
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    args = ", ".join(f"{k}{'' if k in required else '?'}: {_type(s)}" for k, s in props.items())
    desc = " ".join(tool.description.split())
    return f"{tool.qualified_name}({args}) -> {_returns(tool.returns)}: {desc}"


def _returns(schema: Any) -> str:
    """A return type: a Literal's values are named by their type (`string`), as in the
    solved examples; listing nine names after every lookup is noise in a one-line form."""
    values = schema.get("enum") if isinstance(schema, dict) else None
    if values:
        return " | ".join(dict.fromkeys(value_type(v) for v in values))
    return _type(schema)


def manual(tools: Sequence[ToolSpec]) -> str:
    return "\n".join(f"- {signature(t)}" for t in tools)


def format_instructions(fmt: str, tools: Sequence[ToolSpec], *, reasoning: bool = False,
                        depth: int = 4, final_only: bool = False,
                        call_format: CallFormat = HERMES) -> str:
    """What to write, for format `fmt` in {"sequential", "tree", "react", "tool_call"}."""
    lead = "Available functions:\n" + manual(tools) + "\n\n"
    why = '"reasoning": "<one short sentence>", ' if reasoning else ""
    if fmt == "sequential":
        return lead + (
            "Answer with one JSON object and nothing else:\n"
            f'{{{why}"input": "<initial input>", "subtasks": [{{"function": "<Plugin.Function>", '
            '"args": {<arguments>}}, ...]}\n'
            "Each subtask's output becomes the next subtask's input.")
    if fmt == "tree":
        call = '{"function": "<Plugin.Function>", "args": {<arguments>}}'
        shape = f'{{{why}"plan": {call}}}' if reasoning else call
        return lead + (
            f"Answer with one JSON object and nothing else:\n{shape}\n"
            "An argument may itself be such a call object when that function's return type "
            f"fits the argument; nest at most {depth} levels.")
    if fmt == "react":
        if final_only:
            return lead + "Write exactly:\nThought: <one line>\nFinal Answer: <answer>"
        return lead + (
            "Write exactly one step, either\nThought: <one line>\nAction: <Plugin.Function>\n"
            "Action Input: <JSON arguments>\nor\nThought: <one line>\nFinal Answer: <answer>")
    if fmt == "tool_call":
        example = (call_format.open + json.dumps({call_format.name_key: "<Plugin.Function>",
                                                  call_format.args_key: {}})
                   + call_format.close)
        return lead + (
            f"To call functions, write one or more blocks like\n{example}\n"
            "Otherwise answer in plain text.")
    raise ValueError(f"unknown format {fmt!r}")
