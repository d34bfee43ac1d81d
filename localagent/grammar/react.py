"""The ReAct step constraint: a thought, then one action with its arguments or a final answer."""

from __future__ import annotations

from collections.abc import Sequence

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.common import DEFAULT_BOUNDS, args_rules, bounded_text, cached, render
from localagent.grammar.jsonlark import Bounds, LarkRules, lit
from localagent.tools.spec import ToolSpec


def react_step(tools: Sequence[ToolSpec], *, final_only: bool = False,
               allowed_finals: Sequence[str] | None = None, allow_final: bool = True,
               bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """`Thought: ...` then `Action: <tool>` + `Action Input: <its args>`, or `Final Answer: ...`.

    `final_only`: the step must be the final answer; `allowed_finals`: the only answers
    admitted (grounded answers); `allow_final=False`: the step must be an action.
    """
    if final_only and not allow_final:
        raise ConstraintError("a ReAct step cannot be final-only and forbid the final answer")
    options = {"final_only": final_only, "finals": list(allowed_finals or []), "bounds": bounds,
               "allow_final": allow_final}

    def build() -> str:
        rules = LarkRules(bounds)
        heads = [] if final_only else args_rules(rules, tools, "act", lambda t, a: (
            f"{lit('Action: ' + t.qualified_name + chr(10) + 'Action Input: ')} {a}"))
        actions = f"action: {' | '.join(heads)}" if heads else ""
        if not heads and not final_only and not allow_final:
            raise ConstraintError("no function can be called and no final answer is allowed")
        if allowed_finals:
            final = " | ".join(lit(" ".join(a.split())) for a in allowed_finals)
        else:
            final = bounded_text(bounds.max_text)
        return render("react", thought=bounded_text(bounds.max_text),
                      step="final" if final_only or not heads else (
                          "(action | final)" if allow_final else "action"),
                      actions=actions, final=final, rules=rules.render())

    return cached("react", tools, options, build)
