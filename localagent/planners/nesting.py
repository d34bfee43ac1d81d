"""The `once` and `shallow` techniques: plan shapes a goal never asks for.

`once`: a function the goal names once is not applied to its own result.

Why: on the generalisation suite the default model repeats a lookup inside itself:
"Who manages the driver of the vehicle Condor?" planned as
`GetManager(GetManager(GetDriver(Condor)))`, "How many points are the Falcons ahead of the
Wolves?" as `GetPoints(TopTeam(TopTeam(..), TopTeam(..)))`. A goal that wants a lookup
applied to its own result says so by naming it twice ("the manager of Leena's manager").
So the tree grammar does not let a function take a call of itself as an argument unless
the goal says its name's telling words at least twice. Only a function of one required
argument (a lookup: x -> f(x)) is held to this; one that combines two values (add,
TopTeam) may take its own result: a sum of three values is `add(add(a, b), c)`, the best
of three teams `TopTeam(TopTeam(a, b), c)`.

A function that maps a thing to another of the same kind (GetManager: a person to a
person) is not offered at all when the goal does not name it: "What is the yearly salary
of the person who drives the vehicle Ember?" was planned as
`GetSalary(GetManager(GetManager(GetDriver(Ember))))`. Any other function may be needed
without being named ("How many kilometres can Atlas drive on a full tank?" needs
GetConsumption), but a person's manager is never a step the goal leaves unsaid.

`shallow`: arithmetic stands only in the outer two levels of a tree plan, and in the
second only with a call among its arguments. Seen: "What is Dev's salary per month, if
the yearly salary is paid in 12 equal parts?" planned as `divide(GetSalary(Dev),
multiply(divide(multiply(12, 100), ...), ...))`; the density of Kenya and the fuel for a
250 km trip nested arithmetic four deep. Every arithmetic goal of the generalisation suite
is solved with at most two levels of it (`divide(multiply(GetConsumption(Dingo), 250),
100)`), and arithmetic on literals alone is a number the plan could have written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from localagent.grammar.types import fits
from localagent.planners.head import says_count
from localagent.planners.named import unquoted
from localagent.tools.spec import ToolSpec


def goal_words(goal: str) -> list[str]:
    """The goal's words, lower case, quoted text aside (what `says_count` counts in)."""
    return re.findall(r"[a-z0-9]+", unquoted(goal).lower())


def no_self_nesting(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The functions that may not take their own result as an argument for `goal`."""
    words = goal_words(goal)
    return [t.qualified_name for t in tools
            if len(t.parameters.get("required", [])) == 1 and says_count(t, words) < 2]


def maps_to_own_kind(tool: ToolSpec) -> bool:
    """One required argument, and the result fits it (GetManager: a name to a name)."""
    required = tool.parameters.get("required", [])
    props = tool.parameters.get("properties", {})
    return (len(required) == 1 and bool(tool.returns)
            and fits(props.get(required[0], {}), tool.returns, tool.parameters))


def unnamed_self_maps(goal: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The functions mapping a thing to one of its own kind that `goal` does not name."""
    words = goal_words(goal)
    return [t.qualified_name for t in tools if maps_to_own_kind(t) and not says_count(t, words)]


def arithmetic(tools: Sequence[ToolSpec]) -> list[str]:
    """The functions that combine two or more numbers into a number (add, divide...)."""
    def numeric(schema: object) -> bool:
        return isinstance(schema, dict) and schema.get("type") in ("number", "integer")
    out = []
    for t in tools:
        required = t.parameters.get("required", [])
        props = t.parameters.get("properties", {})
        if len(required) >= 2 and all(numeric(props.get(k)) for k in required) \
                and numeric(t.returns):
            out.append(t.qualified_name)
    return out
