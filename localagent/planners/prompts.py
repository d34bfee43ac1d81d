"""Prompt text for the four planners, written from the registry's manual.

Why invented tools in the examples: a prompt that shows the very functions of a test
scenario would measure memory of the prompt, not planning. Every few-shot example uses
functions that exist only in the example library (`library/solved_plans.yaml`:
`Inventory.GetStock`, `Math.Multiply`, `Mail.Write`...); the plan planners take the
examples as an argument (fixed, or chosen by similarity; see `examples.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from localagent.grammar.instructions import signature
from localagent.grammar.types import field_paths
from localagent.plan_expression import to_expression
from localagent.planners.examples import SolvedPlan
from localagent.tools.manual import render_manual
from localagent.tools.spec import ToolSpec


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _signatures(tools: Sequence[ToolSpec]) -> str:
    return " ".join(signature(t) for t in tools)


def _shots(examples: Sequence[SolvedPlan], write: Callable[[SolvedPlan], Any]) -> str:
    """Each example with the signatures of the functions it uses, its goal and its plan
    (a plan `write` gives as text is shown as it is, a JSON plan dumped)."""
    return "\n\n".join(
        f"Functions: {_signatures(ex.tools)}\n"
        f"Goal: {ex.goal}\nPlan: {_plan_text(write(ex))}" for ex in examples)


def _plan_text(plan: Any) -> str:
    return plan if isinstance(plan, str) else _dump(plan)


def _task(goal: str, tools: Sequence[ToolSpec], compact: bool, english: str = "",
          note: str = "") -> str:
    """The real task after the examples. `compact` (a technique): written exactly as an
    example is (one signature line), so the model continues a pattern it has just seen
    three times; else the full manual, one block per function. `english`: the goal in
    English (the filter's translation, "" when it is the goal itself), shown under the
    goal: the small model plans English goals better (docs/BENCHMARKS.md). `note`: a line
    between the manual and the goal (the goal's values, `layout.values_apart`)."""
    line = f"\nIn English: {english}" if english else ""
    if compact:
        return (f"Now the real task.\n\nFunctions: {_signatures(tools)}\nGoal: {goal}{line}"
                "\nPlan:")
    return (f"Now the real task. Functions:\n{render_manual(tools)}\n\n{note}Goal: {goal}"
            f"{line}\nPlan:")


TREE_SYSTEM = (
    "You plan how to reach a goal by calling functions. A plan is ONE call; an argument "
    "may be another call whose result is used there, so calls nest: the last operation "
    "is the outermost call and the first lookups are the innermost. Look every fact up "
    "with a function; never invent a number. Use only the functions listed.")
# With the `decline` technique: the refusal plan the grammar admits (grammar/common.py).
NO_PLAN = (' If none of the listed functions can reach the goal, the plan is '
           '{"function": "none", "args": {}}.')
SEQUENTIAL_NO_PLAN = (' If none of the listed functions can reach the goal, the subtasks '
                      'are [{"function": "none", "args": {}}].')
# Only where an offered function returns an object or a list (structured results): the
# part of a result a plan may take (grammar/fields.py); other prompts stay as they were.
TREE_FIELDS = (' A call may end with "field": "<name>" to use only that field of its '
               'result ("items[0].price": a field of the first list item); the outermost '
               'call too, when the goal asks for one field.')
SEQUENTIAL_FIELDS = (' "$k.<name>" is that field of the output of subtask k ("$2[0].price": '
                     'a field of its first list item); the last subtask may end with '
                     '"field": "<name>" when the goal asks for one field of its result.')


def has_fields(tools: Sequence[ToolSpec]) -> bool:
    """Whether some offered function's result has parts a plan may take."""
    return any(field_paths(t.returns) for t in tools)


# The examples of field access, shown after the others only where `has_fields`: invented
# functions, like every example (library/solved_plans.yaml). (goal, reasoning, tree plan,
# sequential plan)
_CAR = {"function": "Garage.GetCar", "args": {"plate": "K-77"}}
FIELD_FUNCTIONS = ("Garage.GetCar(plate: string) -> object {model: string, km: number, "
                   "owner: object {name: string, city: string}}: Look up a car by its "
                   "plate. Math.Multiply(value1: number, value2: number) -> number: "
                   "Multiply two numbers.")
FIELD_EXAMPLES = (
    ("Who owns the car K-77?", "1. Garage.GetCar(K-77), its owner.name",
     {**_CAR, "field": "owner.name"},
     {"input": "", "subtasks": [{**_CAR, "field": "owner.name"}]}),
    ("What is twice the mileage of the car K-77?",
     "1. Garage.GetCar(K-77), its km; 2. Math.Multiply(step 1, 2)",
     {"function": "Math.Multiply", "args": {"value1": {**_CAR, "field": "km"}, "value2": 2}},
     {"input": "", "subtasks": [_CAR, {"function": "Math.Multiply", "args": {
         "value1": "$1.km", "value2": 2}}]}),
)


def _field_shots(tree: bool, reasoning: bool, expression: bool = False) -> str:
    """The field-access note and examples, written as `_shots` writes the others. They come
    after the fixed examples, never in the system text: whether they are shown depends on
    the tools the filter offers for a goal, and what depends on the goal must follow the
    fixed part of the prompt, or consecutive goals share no prefix (the KV cache)."""
    note = EXPRESSION_FIELDS if expression else TREE_FIELDS if tree else SEQUENTIAL_FIELDS
    shots = [note.strip()]
    for goal, why, tree_plan, steps in FIELD_EXAMPLES:
        plan: Any = tree_plan if tree else steps
        if expression:
            plan = to_expression(tree_plan)
        elif reasoning:
            plan = {"reasoning": why, "plan": plan} if tree else {"reasoning": why, **plan}
        shots.append(f"Functions: {FIELD_FUNCTIONS}\nGoal: {goal}\nPlan: {_plan_text(plan)}")
    return "\n\n" + "\n\n".join(shots)


# With the `expression` technique: what the JSON form's `"field"` is in a call expression.
EXPRESSION_FIELDS = (' A call may end with ["<name>"] to use only that field of its result '
                     '([0]["price"]: a field of the first list item); the outermost call '
                     'too, when the goal asks for one field.')

TREE_REASONING = (" First list the steps in \"reasoning\", one function call per step, "
                  "then write the nested \"plan\".")


def tree_prompt(goal: str, tools: Sequence[ToolSpec], examples: Sequence[SolvedPlan], *,
                reasoning: bool = True, compact: bool = False,
                decline: bool = False, expression: bool = False,
                english: str = "", note: str = "") -> list[dict[str, str]]:
    """Chat messages for the tree planner: examples over other functions, the manual, the goal.
    `note`: a line before the goal (`layout.values_apart`).
    `expression`: every plan written as a call expression (`plan_expression.py`), no
    reasoning field. `english`: the goal in English (`_task`).

    Order: what changes least comes first, so consecutive goals share the longest prompt
    prefix (and the KV cache): fixed examples, then the functions (the same for every goal
    unless the filter picks them per goal), then the goal.
    """
    def write(ex: SolvedPlan) -> Any:
        if expression:
            return to_expression(ex.plan)
        return {"reasoning": ex.reasoning, "plan": ex.plan} if reasoning else ex.plan

    fields = has_fields(tools)
    reasoning = reasoning and not expression
    system = (TREE_SYSTEM + (NO_PLAN if decline and not expression else "")
              + (TREE_REASONING if reasoning else ""))
    shots = _shots(examples, write) + (
        _field_shots(True, reasoning, expression) if fields else "")
    user = (f"Examples with other functions:\n\n{shots}\n\n"
            f"{_task(goal, tools, compact, english, note)}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


SEQUENTIAL_SYSTEM = (
    "You create a plan to reach a goal as a list of function calls (subtasks) run in "
    "order. The output of each subtask is piped as the \"input\" of the next one, so do "
    "not set \"input\" in args except for a value that does not come from the previous "
    "step. \"input\" of the plan is the starting text. Use only the functions listed; "
    "use as few subtasks as the goal needs, and end with the step that gives the "
    "final form the goal asks for.")
SEQUENTIAL_REFS = (" An argument may be \"$k\", the output of the earlier subtask k "
                   "(\"$1\" is the first); look every fact up with a function, never "
                   "invent a number.")
SEQUENTIAL_REASONING = " First list the steps in \"reasoning\", then write the subtasks."


def sequential_prompt(goal: str, tools: Sequence[ToolSpec], examples: Sequence[SolvedPlan],
                      *, reasoning: bool = True, compact: bool = False,
                      decline: bool = False, english: str = "",
                      note: str = "") -> list[dict[str, str]]:
    """Chat messages for the sequential planner (Semantic Kernel BasicPlanner's idea, with
    ReWOO-style `$k` references so that one step can combine two earlier results).
    `english`: the goal in English (`_task`). `note`: a line before the goal
    (`layout.values_apart`)."""
    def write(ex: SolvedPlan) -> dict[str, Any]:
        plan = ex.sequential()
        return {"reasoning": ex.reasoning, **plan} if reasoning else plan

    fields = has_fields(tools)
    system = (SEQUENTIAL_SYSTEM + SEQUENTIAL_REFS + (SEQUENTIAL_NO_PLAN if decline else "")
              + (SEQUENTIAL_REASONING if reasoning else ""))
    shots = _shots(examples, write) + (_field_shots(False, reasoning) if fields else "")
    user = (f"Examples with other functions:\n\n{shots}\n\n"
            f"{_task(goal, tools, compact, english, note)}")
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


# With the `decline` technique, the one Final Answer the first ReAct step may give.
NO_TOOL_ANSWER = "none of the tools can answer this"
REACT_DECLINE = ("\nIf none of the tools can answer the question, write at once:\n"
                 "Thought: no tool fits\nFinal Answer: " + NO_TOOL_ANSWER + "\n")


def react_header(goal: str, tools: Sequence[ToolSpec], chat: Any | None, *,
                 decline: bool = False) -> str:
    """The fixed start of every ReAct step's prompt; steps append to it, never rewrite it.

    `chat`: the LLM, to render with its chat template (the transcript then continues the
    assistant's turn), or None for a plain-text prompt. `decline`: the instructions name
    the refusal answer (`NO_TOOL_ANSWER`).
    """
    text = REACT_INSTRUCTIONS.format(manual=render_manual(tools),
                                     names=", ".join(t.qualified_name for t in tools))
    if decline:
        text = text.replace("\n\nBegin!", REACT_DECLINE + "\nBegin!")
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
    "further step pointless, do not take it. When you can answer, reply in plain text. "
    "If none of the tools can help with the question, say so in one sentence instead of "
    "calling a tool.")
