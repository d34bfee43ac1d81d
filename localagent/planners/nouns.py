"""The `nouns` technique: a function the goal names as "X's N", "the N of X", "per N" or
"the N with ..." is called by the plan.

Why: with `head`, "What club does Ada's tutor belong to?" is rooted in GetClub, and the
default model then writes `GetClub(Ada)`: the tutor is lost (seen on tools no prompt
example shows). "How many tickets per show has the Rialto sold?" became
`divide(GetTickets(Rialto), GetSeats(Rialto))`. In English a possessive ("Ada's tutor"),
an of-phrase ("the owner of the boat Osprey"), "per N" and a noun a clause picks out ("the
cinema with more shows": BusierCinema) name a value the answer is built from, so the
function that noun names must be called (any one of them when the noun names several:
"the library's books"). The tree grammar enforces it as the `cover` technique enforces
named values (grammar/covering.py).

Not counted: a noun after "whose" ("the city whose mayor is Noor" needs CityOfMayor, not
GetMayor) and nouns that name no function ("per month").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from localagent.planners.head import noun_words, says
from localagent.planners.named import unquoted
from localagent.tools.spec import ToolSpec

_PHRASES = [
    # Ada's tutor, the library's books (not "what's the ...")
    re.compile(r"\b(?!(?:what|who|it|that|there|here|he|she|where|how)'s)\w+'s?\s+"
               r"(?P<np>[a-z ]+)"),
    re.compile(r"\bthe\s+(?P<np>(?:[a-z]+\s+){0,2}?[a-z]+)\s+of\b"),  # the owner of
    re.compile(r"\bper\s+(?P<np>[a-z]+)"),  # per show
    re.compile(r"\bthe\s+(?P<np>[a-z]+)\s+(?:with|that|which)\b"),  # the cinema with more
]


def needed_functions(goal: str, tools: Sequence[ToolSpec]) -> list[list[str]]:
    """For each noun of `goal` in one of those phrases that names functions, the
    qualified names of those functions (the plan must call one of each list)."""
    text = unquoted(goal).lower()
    needs: list[list[str]] = []
    for rx in _PHRASES:
        for m in rx.finditer(text):
            words = noun_words(m.group("np").split())
            named = [t.qualified_name for t in tools if words and says(t, words)]
            if named and named not in needs:
                needs.append(named)
    return needs
