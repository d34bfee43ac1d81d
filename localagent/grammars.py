"""Constraints for the four planning formats, built from a set of tools; and their parsers.

The public entry of the grammar layer (the pieces live in `localagent.grammar`):

- builders, cached per (tool set, format, options): `sequential_plan`, `tree_plan`,
  `react_step`, `tool_call_turn` return a `Constraint` (Lark, llguidance dialect) whose
  template lives in the top-level `grammars/` folder;
- parsers that return plain data and validate every call against its tool's schema:
  `parse_sequential`, `parse_tree`, `parse_react`, `parse_tool_calls`; they raise
  `PlanValidationError`, and `ensure_complete` raises `TruncatedOutputError` for an
  output cut at max_tokens, so a planner retries instead of executing a broken plan;
- `format_instructions` describes each format in the prompt, which is all a model has
  when a planner generates unconstrained (`constraint=None`).

The backend compiles a `Constraint` with `localagent.llm.constrained.processor_for`, once
per tokenizer; `localagent.llm.constrained.matches` checks a text without a model.
"""

from __future__ import annotations

from localagent.grammar.common import HERMES, BuildStats, CallFormat, build_stats, tools_hash
from localagent.grammar.instructions import format_instructions, manual, signature
from localagent.grammar.jsonlark import Bounds
from localagent.grammar.parse import (
    ParsedPlan,
    ReactStep,
    ToolCall,
    ToolCallTurn,
    args_errors,
    ensure_complete,
    is_call,
    json_object_lost,
    parse_sequential,
    parse_tree,
)
from localagent.grammar.parse_steps import parse_react, parse_tool_calls
from localagent.grammar.react import react_step
from localagent.grammar.sequential import sequential_plan
from localagent.grammar.tool_call import text_answer, tool_call_turn
from localagent.grammar.tree import tree_plan
from localagent.grammar.types import fits

FORMATS = ("sequential", "tree", "react", "tool_call")

__all__ = [
    "FORMATS",
    "HERMES",
    "Bounds",
    "BuildStats",
    "CallFormat",
    "ParsedPlan",
    "ReactStep",
    "ToolCall",
    "ToolCallTurn",
    "args_errors",
    "build_stats",
    "ensure_complete",
    "fits",
    "format_instructions",
    "is_call",
    "json_object_lost",
    "manual",
    "parse_react",
    "parse_sequential",
    "parse_tool_calls",
    "parse_tree",
    "react_step",
    "sequential_plan",
    "signature",
    "text_answer",
    "tool_call_turn",
    "tools_hash",
    "tree_plan",
]
