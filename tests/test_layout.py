"""The manual laid out for KV-cache reuse (`planners/layout.py`): the goal's values set
apart, a session's first-offered order, and the prompts two consecutive goals really
share in the tree and sequential planners (real MiniLM and Chroma for the filter, a
scripted model)."""

from __future__ import annotations

import json
import os

import pytest

from localagent.llm.scripted import ScriptedLLM, ScriptedRequest
from localagent.planners.layout import OfferOrder, values_apart
from localagent.planners.mentions import anchor_to_goal
from localagent.retrieval import FilterOptions, ToolIndex
from localagent.tools.registry import default_registry
from localagent.tools.spec import ToolSpec

ARITHMETIC = ("MathPlugin.add", "MathPlugin.subtract", "MathPlugin.multiply",
              "MathPlugin.divide")


def _examples(*names: str) -> list[ToolSpec]:
    specs = {s.qualified_name: s for s in default_registry(examples=True).specs()}
    return [specs[n] for n in names]


def test_a_session_keeps_the_order_of_first_offer() -> None:
    a, b, c, d = _examples("DemoPlugin.Diff", "DemoPlugin.GetInvoice", "DemoPlugin.Total",
                           "CurrencyPlugin.ConvertCurrency")
    order = OfferOrder()
    assert order([a, b, c]) == [a, b, c]
    assert order([d, a, c]) == [a, c, d]  # d is new: after the ones offered before
    assert order([b, d]) == [b, d]
    assert OfferOrder()([d, a]) == [d, a]  # a new session: the order given


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ToolIndex:
    return ToolIndex(tmp_path_factory.mktemp("layout-index"))


@pytest.mark.parametrize("planner", ["tree", "sequential"])
def test_consecutive_goals_share_the_whole_manual(index: ToolIndex, planner: str) -> None:
    """`mentions` narrows GetInvoice to each goal's companies: the prompt lists all
    companies in the manual and the goal's after it, so the second plan prompt shares the
    first one's whole manual."""
    plans = {
        "What is the invoice of B minus the invoice of D?": ("MathPlugin.subtract", "B", "D"),
        "What is the total of the invoices of A and C?": ("DemoPlugin.Total", "A", "C"),
    }

    def respond(request: ScriptedRequest) -> str:
        goal = next(g for g in plans if g in request.prompt)
        if request.constraint is None:  # the filter's translation: English already
            return goal
        function, x, y = plans[goal]
        call = lambda c: {"function": "DemoPlugin.GetInvoice", "args": {"company": c}}
        if planner == "sequential":
            return json.dumps({"input": "", "subtasks": [
                call(x), call(y), {"function": function,
                                   "args": {"value1": "$1", "value2": "$2"}}]})
        return json.dumps({"function": function, "args": {"value1": call(x), "value2": call(y)}})

    from localagent.agent import Agent

    llm = ScriptedLLM(responder=respond)
    agent = Agent(llm, examples=True, index=index, techniques="default",
                  filter=FilterOptions(max_relevant_functions=6, included_functions=ARITHMETIC))
    answers = [agent.run(goal, planner=planner).answer for goal in plans]
    assert answers == [-5200, 22000]
    first, second = (r.prompt for r in llm.requests if r.constraint is not None)
    shared = os.path.commonprefix([first, second])
    manual = first[first.index("[AVAILABLE FUNCTIONS]"):first.index("[END AVAILABLE FUNCTIONS]")]
    assert manual in shared
    assert 'company (one of "A", "B", "C", "D", "E", "F"; required)' in manual
    assert 'Values of this goal: DemoPlugin.GetInvoice company: "B", "D"\nGoal:' in first
    assert 'Values of this goal: DemoPlugin.GetInvoice company: "A", "C"\nGoal:' in second


def test_the_goals_values_are_set_apart_from_the_manual() -> None:
    tools = _examples("DemoPlugin.GetInvoice", "DemoPlugin.Total")
    shown = anchor_to_goal(tools, "What is the total of the invoices of A and C?")
    manual, note = values_apart(tools, shown)
    assert manual[0].parameters == tools[0].parameters  # every company listed
    assert manual[1] is shown[1]  # "the result of another function": no value listed
    assert note == 'Values of this goal: DemoPlugin.GetInvoice company: "A", "C"\n'
    assert values_apart(tools, tools) == (tools, "")
