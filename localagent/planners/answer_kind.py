"""The `answer` technique: the plan's outermost call returns the kind of value asked for.

Why: on tools no prompt example shows, the default model often writes a plan whose last
call answers a different question: "Of the Rialto and the Odeon, how many seats has the
cinema with more shows?" planned as `BusierCinema(Rialto, Odeon)` (a cinema, not a count),
and "Which cinema has more shows, the Rialto or the Odeon?" as arithmetic on shows. The
question word says which kind of value the answer is, the way question-answering systems
have long typed their answers: "how many / how much / how far ..." asks for a number;
"who / which / whose" and "name / list" ask for a name or a list. The tree grammar then
admits at its root only the functions whose declared return type is of that kind.

Only the head of a question counts: a question word at the start of the goal or of a
clause after a comma ("Of the Rialto and the Odeon, which cinema ..."), optionally after
a preposition ("In which club ..."). A relative "who" ("the person who owns the boat
Osprey") is not a question. English only; a goal with no recognised question word
("What is the area of Tallinn?", "Write a poem") leaves the root open.

The question may also name the operation whose result it asks for: "How much is the
difference between the total of X and the total of Y?" asks for a difference, so the root
must be a function that names subtraction (its name or description says difference,
subtract or minus). Seen: with 200 distractor tools in the index, the default model
rooted such a plan in the sum function. Only "what/how much is the
difference/sum/total/product/ratio between/of" counts ("the total length of" does not),
and a restriction that no offered function meets is dropped.

Likewise a goal whose last phrase names a function ("..., in German, in uppercase";
"Convert the text 'good night' to uppercase.") asks for that function's output: the plan
ends with it. Seen: for a goal asking for translated text in uppercase, the sequential
planner ended with the translation or wrote one step only. A function is named when its
name, split into words ("uppercase", "trim end"), is the last phrase's last words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from localagent.grammar.types import ANY, json_types, value_type
from localagent.tools.spec import ToolSpec

AnswerKind = Literal["number", "name"]

_HEAD = r"(?:^|[,;:.?!]\s+)(?:(?:in|of|for|from|to|at|by|with|on)\s+)?"
_NUMBER = re.compile(_HEAD + r"how\s+(?:many|much|far|long|old|large|big|heavy|tall|often|"
                     r"fast|high|deep|wide)\b", re.IGNORECASE)
_NAME = re.compile(_HEAD + r"(?:who|whom|whose|which|name|list)\b", re.IGNORECASE)
_OPERATION = re.compile(_HEAD + r"(?:what|how\s+much)\s+(?:is|are|was|were)\s+the\s+"
                        r"(difference|sum|total|product|ratio|quotient)\s+(?:between|of)\b",
                        re.IGNORECASE)
# the words by which a function says it performs an operation (name or description)
OPERATION_WORDS = {
    "difference": ("difference", "diff", "subtract", "minus"),
    "sum": ("sum", "total", "add", "plus"),
    "product": ("product", "multiply", "times"),
    "ratio": ("ratio", "quotient", "divide"),
}
OPERATION_WORDS["total"] = OPERATION_WORDS["sum"]
OPERATION_WORDS["quotient"] = OPERATION_WORDS["ratio"]
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
NUMBERS = {"number", "integer"}


def answer_kind(goal: str) -> AnswerKind | None:
    """The kind of answer `goal` asks for, from its first question word (None: unknown).
    Quoted text is not the question; a question word after a comma counts only when the
    goal is a question (ends with "?"): else ", which" is a relative clause."""
    text = _QUOTED.sub("''", goal.strip())
    if not text.endswith("?"):
        text = text[:1] and re.split(r"[,;:.?!]\s", text, maxsplit=1)[0]
    found = [(m.start(), kind) for kind, rx in (("number", _NUMBER), ("name", _NAME))
             for m in [rx.search(text)] if m]
    return min(found)[1] if found else None  # type: ignore[return-value]


def returns_kind(tool: ToolSpec, kind: AnswerKind) -> bool:
    """Whether `tool` may give an answer of `kind`. An undeclared return type may be
    anything, so it stays admitted."""
    types = json_types(tool.returns) if tool.returns else {ANY}
    if "enum" in types:  # a Literal return: judge its values
        values = tool.returns.get("enum", [tool.returns.get("const")])
        types = (types - {"enum"}) | {value_type(v) for v in values}
        types = {ANY if t == "enum" else t for t in types}
    if ANY in types:
        return True
    if kind == "number":
        return bool(types & NUMBERS)
    return bool(types - NUMBERS)


def asked_operation(goal: str) -> str | None:
    """The operation whose result the question asks for ("difference"), or None."""
    found = _OPERATION.search(_QUOTED.sub("''", goal.strip()))
    return found.group(1).lower() if found else None


def performs(tool: ToolSpec, operation: str) -> bool:
    """Whether the function's name or description names `operation`."""
    text = f"{tool.name} {tool.description or ''}".lower()
    return any(re.search(rf"\b{w}", text) for w in OPERATION_WORDS[operation])


def final_form(goal: str, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The functions the goal's last phrase names (by their whole name), if any."""
    text = _QUOTED.sub("''", goal.strip()).rstrip(" .!?")
    last = " ".join(re.split(r"[,;:]", text)[-1].lower().split())
    return [t for t in tools if t.name_words
            and re.search(rf"\b{re.escape(' '.join(t.name_words))}$", last)]


def answer_roots(goal: str, tools: Sequence[ToolSpec]) -> list[str] | None:
    """The functions a plan for `goal` may end with (None: any): those returning the kind
    asked for, performing the operation the question names, and named by its last
    phrase. A restriction that no tool meets is dropped rather than admitting no plan."""
    kind, operation = answer_kind(goal), asked_operation(goal)
    roots = [t for t in tools if kind is None or returns_kind(t, kind)] or list(tools)
    if operation:
        roots = [t for t in roots if performs(t, operation)] or roots
    named = final_form(goal, tools)
    roots = [t for t in roots if t in named] or roots
    return [t.qualified_name for t in roots] if len(roots) < len(tools) else None
