"""The `head` technique: the plan ends in what the question's head asks for.

Why: seen with the default model on tools no prompt example shows, the tree planner's
plans often answer a part of the question: "What club does Ada's tutor belong to?" planned
as `GetTutor(Ada)`; "Who is the mayor of Tallinn?" as `CityOfMayor(GetMayor(Tallinn))`;
"How many more pages does A have than B?" as a division; "How many tickets per show has
the Rialto sold?" as `GetTickets(Rialto)`. A question says what its answer is in two
places, and `head` restricts the outermost call (the last step) to match:

- an operation cue, the earliest in the goal: a comparison ("more ... than", "ahead of",
  "difference") asks for a difference; "times larger", "per" for a ratio; "together",
  "in total", "combined" for a sum; "multiplied by" for a product. The root must be a
  function that names that operation (`answer_kind.performs`: subtract, divide, add...);
- otherwise the head noun: the noun phrase right after the question word ("What is the
  yearly fee of ...", "How many tickets has ...", "What club does ...", "Who is Noor's
  tutor?"). The root must be a function whose name says that noun ("fee": GetFee); of
  those, the ones returning a list for a plural noun ("Which films by ..."), one value
  for a singular one ("In which club ..."), unless the question asks for a number. A head
  noun that names no function ("How many matches", "Which team") leaves the root open;
- a question whose head is a verb ("Who tutors the owner of ...") asks for the one who
  does it: the root must be a function whose name says that verb's noun (GetTutor, by
  the same word stem); a verb no function says ("Who wrote ...") leaves it open;
- but first, "the same N as X" asks for what shares X's N: the root must be a function
  that takes an N ("Who is in the same club as Noor?": ListClub, not GetClub).

English only, like `answer_kind`, whose restriction this one narrows further. A
restriction that no offered function meets is dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from localagent.grammar.types import json_types
from localagent.planners.answer_kind import answer_kind, performs
from localagent.planners.named import GENERIC, unquoted
from localagent.tools.spec import ToolSpec

_COMPARATIVE = (r"more|less|fewer|greater|larger|bigger|smaller|higher|lower|longer|shorter|"
                r"older|younger|heavier|lighter|farther|further|closer|faster|slower")
# each cue and the operation it asks for; the earliest cue in the goal wins
_CUES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\btimes\s+(?:as|" + _COMPARATIVE + r")\b"), "ratio"),
    (re.compile(r"\b(?:" + _COMPARATIVE + r")\b[^,;:.?!]*?\bthan\b"), "difference"),
    (re.compile(r"\b(?:ahead\s+of|behind|difference)\b"), "difference"),
    (re.compile(r"\b(?:per|ratio|quotient|divided\s+by)\b"), "ratio"),
    (re.compile(r"\b(?:together|in\s+total|total|combined|altogether|sum|plus)\b"), "sum"),
    (re.compile(r"\b(?:product|multiplied\s+by)\b"), "product"),
    (re.compile(r"\bminus\b"), "difference"),
]
_SAME = re.compile(r"\bsame\s+([a-z]+)\s+as\b")
_VERB_HEAD = re.compile(r"^who\s+(?P<verb>[a-z]+s)\b")  # "who manages", "who drives"
_AUXILIARY = {"is", "was", "has", "does"}
_HEAD = r"(?:^|[,;:.?!]\s+)(?:(?:in|of|for|from|to|at|by|with|on)\s+)?"
_NOUN_PHRASE = re.compile(
    _HEAD + r"(?:(?:what|which|who)\s+(?:is|are|was|were)\s+|how\s+(?:many|much)\s+|"
    r"(?:what|which)\s+|(?:list|name)\s+(?:all\s+)?)(?P<np>[^,;:.?!]*)")
# words that end a head noun phrase ("pages does ...", "fee of ...", "books by ...")
_NP_END = {"of", "does", "do", "did", "has", "have", "had", "is", "are", "was", "were", "in",
           "by", "per", "for", "from", "can", "could", "will", "would", "whose", "that",
           "which", "who", "to", "on", "at", "with", "than"}
# name words that say how a result is given, not what it is (ListFilmsBy: films)
_FORM = GENERIC | {"list", "count", "by", "all", "top"}


def asked_operation(goal: str) -> str | None:
    """The operation the goal's earliest cue asks for (sum, difference, ratio), or None."""
    text = unquoted(goal).lower()
    found = [(m.start(), op) for rx, op in _CUES if (m := rx.search(text))]
    return min(found)[1] if found else None


def head_noun(goal: str) -> list[str]:
    """The words of the noun phrase the question asks about (no articles, no owner):
    "What is Ada's yearly fee?" -> [yearly, fee]; [] when there is none."""
    found = _NOUN_PHRASE.search(unquoted(goal).lower())
    return noun_words(found.group("np").split()) if found else []


def head_verb(goal: str) -> list[str]:
    """The verb a "who" question asks about ("Who manages ..." -> [manages]), else []."""
    found = _VERB_HEAD.search(unquoted(goal).lower())
    return [found.group("verb")] if found and found.group("verb") not in _AUXILIARY else []


def noun_words(words: Sequence[str]) -> list[str]:
    """The noun phrase that starts `words`: up to a word like of/does/in, without
    articles or an owner ("Ada's yearly fee of" -> [yearly, fee])."""
    out: list[str] = []
    for word in words:
        if word in _NP_END:
            break
        if word.endswith(("'s", "'")):  # "Ada's yearly fee": the owner is not the head
            out = []
            continue
        if word not in ("the", "a", "an"):
            out.append(word)
    return out


def _same_word(a: str, b: str) -> bool:
    """The same word up to an ending: page/pages, tutor/tutors, fee/fees."""
    common = len(os.path.commonprefix([a, b]))
    return a == b or (common >= 3 and common >= min(len(a), len(b)) - 1
                      and max(len(a), len(b)) - common <= 3)


def _telling(tool: ToolSpec) -> list[str]:
    return [w for w in tool.name_words if w not in _FORM]


def says(tool: ToolSpec, words: Sequence[str]) -> bool:
    """Whether every telling word of the tool's name is one of `words`."""
    telling = _telling(tool)
    return bool(telling) and all(any(_same_word(t, w) for w in words) for t in telling)


def says_count(tool: ToolSpec, words: Sequence[str]) -> int:
    """How often `words` (a goal's) say the tool's name: the fewest times any one of its
    telling words occurs ("the tutor of Ada's tutor": GetTutor twice)."""
    telling = _telling(tool)
    return min((sum(_same_word(t, w) for w in words) for t in telling), default=0)


def _returns_list(tool: ToolSpec) -> bool:
    return bool(tool.returns) and json_types(tool.returns) == {"array"}


def head_roots(goal: str, tools: Sequence[ToolSpec]) -> list[str] | None:
    """The functions a plan for `goal` may end with (None: any): those performing the
    asked operation, else those taking the N of "the same N as", else those the head
    noun names."""
    operation = asked_operation(goal)
    same = _SAME.search(unquoted(goal).lower())
    if operation:
        roots = [t for t in tools if performs(t, operation)]
    elif same:  # "the same club as Noor": what takes a club, not what gives one
        roots = [t for t in tools if any(_same_word(same.group(1), p)
                                         for p in t.parameters.get("required", []))]
    else:
        noun = head_noun(goal)
        words = noun or head_verb(goal)  # "who tutors": one value, whatever its -s
        roots = [t for t in tools if words and says(t, words)]
        if answer_kind(goal) != "number":  # "how many books": a count, not a list
            plural = noun[-1].endswith("s") and not noun[-1].endswith("ss") if noun else False
            roots = [t for t in roots if _returns_list(t) == plural] or roots
    if not roots or len(roots) == len(tools):
        return None
    return [t.qualified_name for t in roots]


def narrow_roots(roots: list[str] | None, head: list[str] | None) -> list[str] | None:
    """`roots` (from `answer`) narrowed to `head`'s; when none of them is left, `roots`."""
    if head is None:
        return roots
    if roots is None:
        return head
    return [r for r in roots if r in head] or roots
