"""The `shallow` technique, by the tools' types: arithmetic stands only in the outer two
levels of a tree plan, and in the second only with a call among its arguments. Seen:
"What is Ada's fee per month, if the yearly fee is paid in 12 equal parts?" planned as
`divide(GetFee(Ada), multiply(divide(multiply(12, 100), ...), ...))`; a population
density and the fuel for a 250 km trip nested arithmetic four deep. Every arithmetic goal
measured so far has a plan with at most two levels of it (the fuel:
`divide(multiply(GetFuelUse(X), 250), 100)`), and arithmetic on literals alone is a
number the plan could have written.
"""

from __future__ import annotations

from collections.abc import Sequence

from localagent.tools.spec import ToolSpec


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
