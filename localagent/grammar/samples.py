"""Sample tool sets and goals for the grammar tests and `scripts/bench_grammars.py`.

Data-only `ToolSpec`s (no callables): the grammar layer never runs tools. `hostile_tools`
is the stress case: many tools, long descriptions, names that need escaping, deep types.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from localagent.llm.base import LLM
from localagent.tools.spec import ToolSpec

NUM: dict[str, Any] = {"type": "number"}


def _params(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def demo_tools() -> list[ToolSpec]:
    """The invoice demo plus a few unrelated tools (numbers, strings, lists)."""
    s = {"type": "string"}
    return [
        ToolSpec("DemoPlugin", "GetInvoice", "Get the invoice total of a company.",
                 _params(company=s), NUM),
        ToolSpec("DemoPlugin", "Total", "Add two numbers.", _params(value1=NUM, value2=NUM), NUM),
        ToolSpec("DemoPlugin", "Diff", "Subtract value2 from value1.",
                 _params(value1=NUM, value2=NUM), NUM),
        ToolSpec("Math", "Multiply", "Multiply two numbers.", _params(value1=NUM, value2=NUM), NUM),
        ToolSpec("Math", "Calculator", "Evaluate an arithmetic expression such as 2*(3+4).",
                 _params(expression=s), NUM),
        ToolSpec("Stock", "Units", "Units of a product in stock.", _params(product=s),
                 {"type": "integer"}),
        ToolSpec("Stock", "Price", "Unit price of a product.", _params(product=s), NUM),
        ToolSpec("People", "HomeCity", "The home city of a person.", _params(person=s), s),
        ToolSpec("Weather", "Temperature", "Current temperature in a city, in Celsius.",
                 _params(city=s), NUM),
        ToolSpec("Text", "Join", "Join texts with a separator.",
                 {"type": "object", "properties": {
                     "items": {"type": "array", "items": s, "maxItems": 6},
                     "separator": {"type": "string", "default": ", "}},
                  "required": ["items"], "additionalProperties": False}, s),
        ToolSpec("Text", "Upper", "Upper-case a text.", _params(text=s), s),
    ]


def hostile_tools(n: int = 200, *, description_words: int = 120) -> list[ToolSpec]:
    """`n` tools with long descriptions, names needing escaping and deeply nested types."""
    deep: dict[str, Any] = NUM
    for level in range(6):
        deep = {"type": "object", "properties": {f"l{level}": deep, "tag": {
            "type": "string", "enum": ['a"b', "c\\d", "é✓", "x\ny"]}},
            "required": [f"l{level}"], "additionalProperties": False}
    weird = ['quote"d', "back\\slash", "ünïcödé_名前", "new\nline", "tab\tkey", "slash/x"]
    tools = []
    for i in range(n):
        props: dict[str, Any] = {
            weird[i % len(weird)]: {"type": "string", "maxLength": 30},
            "deep": deep,
            "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "many": {"type": "array", "items": {"type": "array", "items": NUM}},
            "free": {"type": "object"},
        }
        params = {"type": "object", "properties": props,
                  "required": [weird[i % len(weird)], "deep"], "additionalProperties": False}
        desc = " ".join(f"word{j}" for j in range(description_words)) + ' with "quotes" \\ ✓'
        tools.append(ToolSpec(f'Plug"{i % 7}', f"Fn_{i}\\ü", desc, params,
                              [NUM, {"type": "string"}, {}][i % 3]))
    return tools


_COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli"]
_PRODUCTS = ["widgets", "bolts", "lamps", "chairs", "cables"]
_PEOPLE = ["Alice", "Bob", "Chen", "Dana", "Emeka"]


def goals(n: int) -> list[str]:
    """`n` varied goals over `demo_tools()` (one-step to three-step)."""
    pairs = itertools.cycle(itertools.permutations(_COMPANIES, 2))
    products, people = itertools.cycle(_PRODUCTS), itertools.cycle(_PEOPLE)
    makers = [
        lambda: "What is the sum of the invoices of {} and {}?".format(*next(pairs)),
        lambda: "How much more is {}'s invoice than {}'s?".format(*next(pairs)),
        lambda: f"What is the value of the {next(products)} in stock (units times unit price)?",
        lambda: f"What is the temperature in the home city of {next(people)}?",
        lambda: f"Compute 17 * {len(_COMPANIES) * 3 + next(pairs)[0].__len__()} + 4.",
        lambda: f"Write the home city of {next(people)} in upper case.",
        lambda: f"Get the invoice of {next(pairs)[0]} and multiply it by 3.",
        lambda: f"How many {next(products)} are in stock?",
        lambda: f"Join the home cities of {next(people)} and {next(people)} with ' and '.",
        lambda: f"What is the total of the invoice of {next(pairs)[1]} and 250?",
    ]
    return [makers[i % len(makers)]() for i in range(n)]


def prompt_for(llm: LLM, instructions: str, goal: str) -> str:
    """A chat prompt when the model has a template, a plain completion prompt otherwise."""
    if llm.info.chat_format:
        return llm.format_chat([{"role": "system", "content": instructions},
                                {"role": "user", "content": goal}])
    return f"{instructions}\n\nGoal: {goal}\nOutput:\n"


def by_name(tools: Sequence[ToolSpec]) -> dict[str, ToolSpec]:
    return {t.qualified_name: t for t in tools}
