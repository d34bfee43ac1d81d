"""The `named` technique: a writing goal names its own steps; the plan is offered only those.

Why: a writing goal such as "Write a short poem about the sea, in French, in uppercase"
names each transformation it wants: short poem, uppercase (and French, the default
language of the sample translation function). Offered a whole writing plugin (the sample
WriterPlugin) and TextPlugin, the default model wrote every writing function in manual
order (Acronym, Brainstorm, EmailGen, ...) before the uppercase. With `named`, a goal that
asks for prose and names at least two functions gets a plan over only the functions it
asks for, listed in the order the goal names them: the order of a recipe ("an email, like
a pirate, in Spanish, in lowercase") is the order of the pipeline.

A function is asked for when each telling word of its name begins a word of the goal
("poem" begins "poems"), or when the goal names a value one of its arguments takes: an
enum value, or a proper-noun default ("French"; a default like "me" or "the team" is not
a value a goal names). Goals that ask for a value ("how many", "which") are left alone:
their arithmetic functions ("subtract") are rarely named by the goal's words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from localagent.grammar.types import DECLARED, string_enum
from localagent.plan import INPUT
from localagent.planners.answer_kind import answer_kind
from localagent.planners.grounding import asks_for_text
from localagent.tools.spec import ToolSpec

# name words that say how a function works, not what it does ("GetFee": fee)
GENERIC = {"get", "set", "find", "make", "do", "run", "gen", "to", "of", "the", "and", "a"}
_WORD = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"")


def _name_position(tool: ToolSpec, goal_words: list[str]) -> int | None:
    """Where the goal first names `tool` by its name, or None when it does not."""
    words = sorted(_telling(tool))
    if not words:
        return None
    places = [next((i for i, g in enumerate(goal_words) if g.startswith(w)), None)
              for w in words]
    return None if None in places else min(p for p in places if p is not None)


def _argument_values(tool: ToolSpec) -> list[str]:
    """The values a goal may name to ask for `tool`: enum values, proper-noun defaults."""
    values: list[str] = []
    for schema in tool.parameters.get("properties", {}).values():
        if not isinstance(schema, dict):
            continue
        values += [str(v) for v in string_enum(schema)]
        default = schema.get("default")
        if isinstance(default, str) and re.fullmatch(r"[A-Z][a-z]+", default):
            values.append(default)
    return values


def _value_position(tool: ToolSpec, goal: str) -> int | None:
    """Where the goal first names a value of `tool`'s arguments (in words), or None."""
    lowered = goal.lower()
    found = [len(_WORD.findall(lowered[:m.start()])) for v in _argument_values(tool)
             if (m := re.search(rf"(?<!\w){re.escape(v.lower())}(?!\w)", lowered))]
    return min(found) if found else None


@dataclass(frozen=True)
class AskedFunctions:
    """What a prose goal asks for: the functions to offer (in the goal's order), those
    named by their own name (each must be called), and the goal's phrases, the only
    texts the plan may start from."""

    tools: list[ToolSpec]
    required: list[str]
    phrases: list[str]

    def narrowed(self) -> list[ToolSpec]:
        """The offered tools with a literal `input` narrowed to the goal's phrases: the
        topic is in the goal ("the sea"), not copied from an example."""
        out = []
        for tool in self.tools:
            props = tool.parameters.get("properties", {})
            if isinstance(props.get(INPUT), dict) and props[INPUT].get("type") == "string":
                # DECLARED None: the manual shows "string", not a menu of phrases
                props = {**props, INPUT: {**props[INPUT], "enum": self.phrases,
                                          DECLARED: None}}
                tool = replace(tool, parameters={**tool.parameters, "properties": props})
            out.append(tool)
        return out


def unquoted(goal: str) -> str:
    """`goal` with its quoted texts blanked out: they are content, not the question."""
    return _QUOTED.sub(" ", goal)


def goal_phrases(goal: str, max_words: int = 12) -> list[str]:
    """The texts a plan may start from: each quoted text whole, then every run of whole
    words within one clause of the rest of `goal` (clauses end at , ; : . ! ?), longest
    first, at most `max_words` words each."""
    phrases = dict.fromkeys(q[1:-1] for q in _QUOTED.findall(goal) if q[1:-1].strip())
    for clause in re.split(r"[,;:.!?]", _QUOTED.sub(" ", goal)):
        words = clause.split()
        for n in range(min(len(words), max_words), 0, -1):
            for i in range(len(words) - n + 1):
                phrases[" ".join(words[i:i + n])] = None
    return list(phrases)


def _telling(tool: ToolSpec) -> frozenset[str]:
    return frozenset(w for w in tool.name_words if w not in GENERIC)


def functions_named(goal: str, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The tools whose names the goal says (quoted text aside), in the goal's order. The
    most specific name wins: "Ada's age" names GetPersonAge, not also GetPerson, whose
    words are a part of it (seen: ReAct, made to call GetPerson as well, failed a goal
    asking for a person's age)."""
    goal_words = _WORD.findall(_QUOTED.sub(" ", goal).lower())  # quoted text is content
    places = {t.qualified_name: p for t in tools
              if (p := _name_position(t, goal_words)) is not None}
    named = [t for t in tools if t.qualified_name in places]
    named = [t for t in named if not any(_telling(t) < _telling(o) for o in named)]
    return sorted(named, key=lambda t: places[t.qualified_name])


def asked_functions(goal: str, tools: Sequence[ToolSpec]) -> AskedFunctions | None:
    """The functions a prose goal asks for, in the goal's order; None when the goal asks
    for a value or names fewer than two functions by name (then every tool stays)."""
    if not asks_for_text(goal) or answer_kind(goal) is not None:
        return None
    goal_words = _WORD.findall(_QUOTED.sub(" ", goal).lower())  # quoted text is content
    by_name = {t.qualified_name: _name_position(t, goal_words)
               for t in functions_named(goal, tools)}
    if len(by_name) < 2:
        return None
    places = {**{t.qualified_name: p for t in tools
                 if (p := _value_position(t, goal)) is not None}, **by_name}
    offered = sorted((t for t in tools if t.qualified_name in places),
                     key=lambda t: places[t.qualified_name])
    return AskedFunctions(offered, [t.qualified_name for t in offered
                                    if t.qualified_name in by_name], goal_phrases(goal))
