"""Conversation memory (conversation.py): what earlier turns each planner is shown."""

from __future__ import annotations

import json

from localagent.agent import Agent
from localagent.conversation import MAX_CHARS, MAX_TURNS, Conversation
from localagent.llm import ScriptedLLM
from localagent.planners.techniques import Techniques
from localagent.tools.decorator import tool
from localagent.tools.registry import ToolRegistry


class Travel:
    @tool
    def distance_km(self, origin: str, destination: str) -> float:
        """The road distance between two cities, in kilometres."""
        return 1213.0

    @tool
    def km_to_miles(self, km: float) -> float:
        """Convert kilometres to miles."""
        return round(km * 0.621371, 1)


def agent(outputs: list[str]) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM(outputs)
    registry = ToolRegistry()
    registry.add_plugin(Travel())
    return Agent(llm, registry=registry, techniques=Techniques.parse("plain")), llm


def tree(function: str, **args: object) -> str:
    return json.dumps({"function": f"Travel.{function}", "args": args})


def test_the_tools_planner_sees_earlier_turns_as_chat_messages() -> None:
    call = '<tool_call>\n{"name": "Travel.km_to_miles", "arguments": {"km": 1213.0}}\n</tool_call>'
    a, llm = agent([tree("distance_km", origin="Lyon", destination="Porto"), call, "753.7"])
    conversation = Conversation()
    first = a.run("How far is Lyon from Porto?", conversation=conversation)
    second = a.run("And in miles?", planner="tools", conversation=conversation)
    assert (first.answer, second.answer) == (1213.0, "753.7")
    messages = conversation.messages()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"] * 2
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "Travel.distance_km", "arguments": {"origin": "Lyon", "destination": "Porto"}}
    assert messages[2]["content"] == "1213.0" and messages[3]["content"] == "1213.0"
    # the tools planner's prompt: the earlier turn in the template's own tool format
    prompt = llm.requests[1].prompt
    assert prompt.index("How far is Lyon from Porto?") < prompt.index("And in miles?")
    assert "Earlier in this conversation" not in prompt


def test_an_unanswered_turn_is_kept_and_old_turns_go_first() -> None:
    conversation = Conversation()
    a, _ = agent([tree("km_to_miles", km=n) for n in range(MAX_TURNS + 1)])
    for n in range(MAX_TURNS + 1):
        a.run(f"goal {n}", conversation=conversation)
    assert [t.goal for t in conversation.turns] == [f"goal {n}" for n in
                                                     range(1, MAX_TURNS + 1)]
    assert "Goal: goal 0" not in conversation.context()
    conversation.clear()
    assert conversation.context() == "" and conversation.messages() == []


def test_long_results_are_cut() -> None:
    conversation = Conversation()
    a, _ = agent([tree("distance_km", origin="x" * 2000, destination="y")])
    a.run("far?", conversation=conversation)
    text = conversation.turns[0].text()
    assert len(text) <= MAX_CHARS and "x" * 100 not in text and "x..." in text
