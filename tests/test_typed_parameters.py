"""Parameters typed with Outlines types (`Annotated[str, Regex(...)]`, `types.email`): the
schema carries the expression anchored, every planner's grammar enforces it, the validator
checks it again (issue 46, item 2)."""

from __future__ import annotations

import json
from typing import Annotated

import pytest
from outlines.types import Regex, email

from localagent import grammars as G
from localagent.errors import InvalidArgumentsError
from localagent.llm.constrained import matches
from localagent.tools.registry import ToolRegistry

CODE = Annotated[str, Regex(r"[A-Z]{3}"), "A three-letter currency code, e.g. EUR."]


def rate(code: CODE) -> float:
    """The value of one unit of the currency in US dollars."""
    return {"EUR": 1.08, "GBP": 1.27}.get(code, 1.0)


def notify(address: Annotated[str, email], text: str) -> str:
    """Send a short text to an e-mail address."""
    return f"sent to {address}"


def registry() -> ToolRegistry:
    r = ToolRegistry()
    r.add_function(rate, "Money")
    r.add_function(notify, "Mail")
    return r


def test_the_schema_carries_the_expression_anchored() -> None:
    spec = registry().spec("Money.rate")
    code = spec.parameters["properties"]["code"]
    assert code["pattern"] == "^(?:([A-Z]{3}))$"
    assert code["type"] == "string" and "currency code" in code["description"]


def test_the_validator_checks_a_full_match() -> None:
    tools = registry()
    assert tools.validate_args("Money.rate", {"code": "EUR"}) == {"code": "EUR"}
    for bad in ("EURO", "eur", "xEURx", ""):
        with pytest.raises(InvalidArgumentsError, match="regular expression"):
            tools.validate_args("Money.rate", {"code": bad})


def _call(function: str, args: dict) -> dict:
    return {"function": function, "args": args}


@pytest.mark.parametrize("code, ok", [("EUR", True), ("EURO", False), ("eur", False),
                                      ("E", False), ("xEURx", False)])
def test_every_planner_grammar_enforces_the_pattern(code: str, ok: bool) -> None:
    specs = registry().specs()
    args = {"code": code}
    tree = json.dumps(_call("Money.rate", args))
    sequential = json.dumps({"input": "", "subtasks": [_call("Money.rate", args)]})
    react = f"Thought: look it up\nAction: Money.rate\nAction Input: {json.dumps(args)}"
    turn = ('<tool_call>\n' + json.dumps({"name": "Money.rate", "arguments": args})
            + '\n</tool_call>')
    assert matches(G.tree_plan(specs), tree) is ok
    assert matches(G.sequential_plan(specs), sequential) is ok
    assert matches(G.react_step(specs), react) is ok
    assert matches(G.tool_call_turn(specs), turn) is ok


def test_a_ready_made_outlines_type_is_enforced_with_json_escaping() -> None:
    specs = registry().specs()
    good = {"address": "ada@example.org", "text": "hi"}
    bad = {"address": "ada at example.org", "text": "hi"}
    assert matches(G.tree_plan(specs), json.dumps(_call("Mail.notify", good)))
    assert not matches(G.tree_plan(specs), json.dumps(_call("Mail.notify", bad)))
