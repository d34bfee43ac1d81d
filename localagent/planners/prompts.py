"""Prompt text for the four planners, written from the registry's manual.

Why invented tools in the examples: a prompt that shows the very functions of a test
scenario would measure memory of the prompt, not planning. Every few-shot example here
uses functions that exist only in the example text (`Inventory.GetStock`, `Math.Multiply`,
`Mail.Write`...), rendered with the same `render_manual` as the real ones, so the model
sees one consistent format.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from localagent.tools.manual import render_manual
from localagent.tools.spec import ToolSpec


def _spec(qualified: str, description: str, args: dict[str, tuple[str, str]],
          returns: str, optional: Sequence[str] = ()) -> ToolSpec:
    plugin, name = qualified.split(".")
    props = {k: {"type": t, "description": d} for k, (t, d) in args.items()}
    required = [k for k in args if k not in optional]
    return ToolSpec(plugin=plugin, name=name, description=description,
                    parameters={"type": "object", "properties": props, "required": required,
                                "additionalProperties": False},
                    returns={"type": returns})


_NUM = ("number", "A number.")
EXAMPLE_TREE_TOOLS = (
    _spec("Inventory.GetStock", "Get how many units of an item are in stock.",
          {"item": ("string", "The item's name, e.g. apples.")}, "integer"),
    _spec("Shop.GetPrice", "Get the unit price of an item, in dollars.",
          {"item": ("string", "The item's name.")}, "number"),
    _spec("Math.Add", "Add two numbers.", {"value1": _NUM, "value2": _NUM}, "number"),
    _spec("Math.Subtract", "Subtract value2 from value1.", {"value1": _NUM, "value2": _NUM},
          "number"),
    _spec("Math.Multiply", "Multiply two numbers.", {"value1": _NUM, "value2": _NUM}, "number"),
)


def _call(function: str, **args: Any) -> dict[str, Any]:
    return {"function": function, "args": args}


_STOCK = lambda item: _call("Inventory.GetStock", item=item)
TREE_EXAMPLES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("What is the value of the pears in stock (units in stock times unit price)?",
     ("1. Inventory.GetStock of pears; 2. Shop.GetPrice of pears; "
      "3. Math.Multiply of step 1 and step 2"),
     _call("Math.Multiply", value1=_STOCK("pears"), value2=_call("Shop.GetPrice", item="pears"))),
    ("How many more apples are in stock than pears and plums together?",
     ("1. Inventory.GetStock of apples; 2. Inventory.GetStock of pears; "
      "3. Inventory.GetStock of plums; 4. Math.Add of step 2 and step 3; "
      "5. Math.Subtract of step 1 and step 4"),
     _call("Math.Subtract", value1=_STOCK("apples"),
           value2=_call("Math.Add", value1=_STOCK("pears"), value2=_STOCK("plums")))),
    ("What is the stock of figs plus 12?",
     "1. Inventory.GetStock of figs; 2. Math.Add of step 1 and 12",
     _call("Math.Add", value1=_STOCK("figs"), value2=12)),
)

EXAMPLE_SEQ_TOOLS = (
    _spec("Mail.Write", "Write a short email about a subject.",
          {"input": ("string", "The subject.")}, "string"),
    _spec("Lang.Translate", "Translate a text into a language.",
          {"input": ("string", "The text."), "language": ("string", "The language.")},
          "string", optional=("language",)),
    _spec("Style.Pirate", "Rewrite a text in the style of a pirate.",
          {"input": ("string", "The text.")}, "string"),
    _spec("Text.Lower", "Convert a text to lowercase.",
          {"input": ("string", "The text.")}, "string"),
)
SEQ_EXAMPLE = (
    "Write an email about our new boat, like a pirate would, in Spanish, in lowercase",
    {"input": "our new boat", "subtasks": [
        _call("Mail.Write"), _call("Style.Pirate"),
        _call("Lang.Translate", language="Spanish"), _call("Text.Lower")]},
)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def tree_prompt(goal: str, tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """Chat messages for the tree planner: manual, three nested examples, the goal."""
    shots = "\n\n".join(
        f"Goal: {g}\nPlan: {_dump({'reasoning': r, 'plan': p})}" for g, r, p in TREE_EXAMPLES)
    system = (
        "You plan how to reach a goal by calling functions. A plan is ONE call; an argument "
        "may be another call whose result is used there, so calls nest: the last operation "
        "is the outermost call and the first lookups are the innermost. First list the steps "
        "in \"reasoning\", one function call per step (look every fact up with a function; "
        "never invent a number), then write the nested \"plan\". Use only the functions "
        "listed.")
    user = (
        f"Example functions:\n{render_manual(EXAMPLE_TREE_TOOLS)}\n\n"
        f"Examples:\n\n{shots}\n\n"
        f"Now the real task. Functions:\n{render_manual(tools)}\n\n"
        f"Goal: {goal}\nPlan:")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def sequential_prompt(goal: str, tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """Chat messages for the sequential planner (Semantic Kernel BasicPlanner's idea)."""
    g, plan = SEQ_EXAMPLE
    system = (
        "You create a plan to reach a goal as a list of function calls (subtasks) run in "
        "order. The output of each subtask is piped as the \"input\" of the next one, so do "
        "not set \"input\" in args except for a value that does not come from the previous "
        "step. \"input\" of the plan is the starting text. Use only the functions listed; "
        "use as few subtasks as the goal needs, and end with the step that gives the "
        "final form the goal asks for.")
    user = (
        f"Example functions:\n{render_manual(EXAMPLE_SEQ_TOOLS)}\n\n"
        f"Example:\nGoal: {g}\nPlan: {_dump(plan)}\n\n"
        f"Now the real task. Functions:\n{render_manual(tools)}\n\n"
        f"Goal: {goal}\nPlan:")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


REACT_INSTRUCTIONS = """Answer the following question as best you can. You have access to \
the following tools:

{manual}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{names}]
Action Input: the input to the action, as a JSON object of arguments
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Only state a Final Answer that the observations support; copy numbers from them exactly.
Example with other tools (Inventory.GetStock, Math.Multiply):
Question: What is twice the stock of figs?
Thought: I need the stock of figs.
Action: Inventory.GetStock
Action Input: {{"item": "figs"}}
Observation: 21
Thought: Now I multiply 21 by 2.
Action: Math.Multiply
Action Input: {{"value1": 21, "value2": 2}}
Observation: 42
Thought: I now know the final answer
Final Answer: 42

Begin!"""


def react_header(goal: str, tools: Sequence[ToolSpec], chat: Any | None) -> str:
    """The fixed start of every ReAct step's prompt; steps append to it, never rewrite it.

    `chat`: the LLM, to render with its chat template (the transcript then continues the
    assistant's turn), or None for a plain-text prompt.
    """
    text = REACT_INSTRUCTIONS.format(manual=render_manual(tools),
                                     names=", ".join(t.qualified_name for t in tools))
    if chat is None or chat.info.chat_format is None:
        return f"{text}\n\nQuestion: {goal}\n"
    return chat.format_chat([{"role": "system", "content": text},
                             {"role": "user", "content": f"Question: {goal}"}])


TOOLS_SYSTEM = (
    "You are a helpful assistant with tools. Call a tool when you need a fact you do not "
    "have; call several tools in one turn only when they do not depend on each other. "
    "When the question depends on a condition (\"if ...\"), first call a tool that checks "
    "the condition, and take the next step only if the result shows the condition holds. "
    "Decide the next step from the tool results you already have: if a result makes a "
    "further step pointless, do not take it. When you can answer, reply in plain text.")
