"""The `fresh` technique: after the first call of the tool-calling loop, a call must pass a
value that a result shows or that the goal states and no earlier call passed; a later turn
with none is written again as the last one (an answer). Values are read from characters and
numbers only, so the rule holds in every language."""

from __future__ import annotations

import json

import pytest

from localagent.executor import Executor
from localagent.grammar.parse import ToolCall
from localagent.llm import ScriptedLLM
from localagent.planners.base import PlannerSettings
from localagent.planners.fresh import fresh_calls, fresh_first_turn
from localagent.planners.techniques import Techniques
from localagent.planners.tool_calling import ANSWER_ONLY, ToolCallingPlanner
from localagent.tools import RecordingStub, schema_tool
from localagent.tools.registry import ToolRegistry, default_registry

TRIANGLE = ToolCall("triangle_properties.get", {"side1": 5, "side2": 4, "side3": 3,
                                                "get_area": True})


@pytest.mark.parametrize("goal", [
    "Find the properties of a triangle whose sides are 5, 4 and 3 units long.",
    "Encuentra las propiedades de un triángulo de lados 5, 4 y 3.",
    "三角形的三条边分别是5、4和3，求它的性质。",
])
def test_a_later_call_on_values_already_passed_brings_nothing(goal: str) -> None:
    circle = ToolCall("circle_properties.get", {"radius": 5, "get_area": True})
    assert fresh_calls([circle], goal, [TRIANGLE]) == ()


@pytest.mark.parametrize(("goal", "call"), [
    # a value a result shows (the text holds the goal and the results so far)
    ("Double the invoice of company D.\n6700", ToolCall("multiply", {"a": 6700, "b": 2})),
    ("Verdopple die Rechnung von Firma D.\n6700", ToolCall("multiply", {"a": 6700, "b": 2})),
    # a value the goal states that no call passed yet
    ("Sides 5, 4 and 3; also a circle of radius 7.", ToolCall("circle", {"radius": 7})),
    ("辺が5、4、3の三角形と、半径7の円。", ToolCall("circle", {"radius": 7})),
    # nothing to judge: no informative value
    ("Sides 5, 4 and 3, and the time now.", ToolCall("now", {"utc": True})),
])
def test_a_later_call_with_a_new_value_runs(goal: str, call: ToolCall) -> None:
    assert fresh_calls([call], goal, [TRIANGLE]) == (call,)


def test_a_short_value_counts_only_as_a_whole_token_in_its_case() -> None:
    """Read loosely, "C" would be the start of "common"."""
    goal = "Find the highest common factor of 36 and 24."
    music = ToolCall("music.scale", {"key": "C", "tempo": 120})
    assert fresh_calls([music], goal, [ToolCall("math.hcf", {"a": 36, "b": 24})]) == ()
    assert fresh_calls([music], "Play the scale of C.", []) == (music,)


@pytest.mark.parametrize("goal", [
    "How many points and how many goals do the Lynx have?",
    "¿Cuántos puntos y cuántos goles tienen los Lynx?",
    "Lynxの勝ち点とゴール数は？",
])
def test_one_value_under_the_same_parameter_of_another_function_runs(goal: str) -> None:
    """Two facts of one entity: the same `team` to another function is a new lookup;
    the same call again is not."""
    points = ToolCall("League.GetPoints", {"team": "Lynx"})
    goals = ToolCall("League.GetGoals", {"team": "Lynx"})
    assert fresh_calls([goals], goal, [points]) == (goals,)
    assert fresh_calls([points], goal, [points]) == ()
    # the same value under another parameter name is still a reuse
    assert fresh_calls([ToolCall("League.Rank", {"rival": "Lynx"})], goal, [points]) == ()


def test_a_value_a_result_shows_runs_even_where_an_earlier_call_passed_it() -> None:
    goal = "Entre los Herons y los Lynx, ¿cuántos goles ha marcado el equipo con más puntos?"
    top = ToolCall("League.TopTeam", {"team_a": "Herons", "team_b": "Lynx"})
    goals = ToolCall("League.GetGoals", {"team": "Herons"})
    assert fresh_calls([goals], goal + "\nHerons", [top], shown="Herons") == (goals,)
    assert fresh_calls([goals], goal + "\nLynx", [top], shown="Lynx") == ()


def test_only_the_calls_that_bring_something_run() -> None:
    goal = "Sides 5, 4 and 3; also a circle of radius 7."
    new, old = ToolCall("circle", {"radius": 7}), ToolCall("circle", {"radius": 5})
    assert fresh_calls([old, new], goal, [TRIANGLE]) == (new,)


@pytest.mark.parametrize("goal", [
    "Play Taylor Swift for 20 minutes and Maroon 5 for 15 minutes.",
    "Spiele 20 Minuten Taylor Swift und 15 Minuten Maroon 5.",
    "Taylor Swiftを20分、Maroon 5を15分再生して。",
])
def test_each_part_of_a_goal_in_several_parts_gets_its_first_turn_call(goal: str) -> None:
    calls = [ToolCall("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
             ToolCall("spotify.play", {"artist": "Maroon 5", "duration": 15})]
    assert fresh_first_turn(calls, goal) == tuple(calls)


@pytest.mark.parametrize("goal", [
    "Check the price of tomatoes and lettuce at the Whole Foods in Los Angeles.",
    "Consulta el precio de tomates y lechuga en el Whole Foods de Los Angeles.",
])
def test_a_first_turn_call_on_reused_or_unstated_values_is_dropped(goal: str) -> None:
    """The first call is the model's; the second passes Los Angeles again under another
    name and a city the goal never names."""
    first = ToolCall("whole_foods.check_price", {"location": "Los Angeles",
                                                 "items": ["tomatoes", "lettuce"]})
    extra = ToolCall("calculate_shortest_distance", {"start_location": "Los Angeles",
                                                     "end_location": "San Francisco"})
    assert fresh_first_turn([first, extra], goal) == (first,)
    assert fresh_first_turn([first, first], goal) == (first,)  # a repeat in one turn


def _tc(name: str, **args: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


FRESH = PlannerSettings(techniques=Techniques.parse("fresh"))


def test_a_turn_with_nothing_new_is_written_again_as_the_answer() -> None:
    registry = default_registry(examples=True)
    specs = [registry.spec("DemoPlugin.GetInvoice"), registry.spec("DemoPlugin.Total")]
    llm = ScriptedLLM([_tc("DemoPlugin.GetInvoice", company="D"),
                       _tc("DemoPlugin.GetInvoice", company="B"),  # B: stated nowhere
                       "6700"])
    out = ToolCallingPlanner(llm, specs, FRESH).run(
        "What is the invoice amount of company D?", Executor(registry))
    assert [c["args"] for t in out.turns for c in t.calls] == [{"company": "D"}]
    assert llm.requests[2].constraint == ANSWER_ONLY and out.answer == "6700"


def test_a_retry_with_a_value_an_error_names_runs() -> None:
    """The lookup fails and its error lists the known cities: retrying with one is new."""
    registry = default_registry(examples=True)
    specs = [registry.spec("WeatherPlugin.DidItRainToday")]
    llm = ScriptedLLM([_tc("WeatherPlugin.DidItRainToday", city="Atlantis"),
                       _tc("WeatherPlugin.DidItRainToday", city="Athens"), "It rained."])
    out = ToolCallingPlanner(llm, specs, FRESH).run(
        "Did it rain in Atlantis today?", Executor(registry))
    first, second = (t.calls[0] for t in out.turns[:2])
    assert first["error"] and "Athens" in first["error"], first
    assert second["args"] == {"city": "Athens"} and second["error"] is None


def test_a_turn_on_a_result_runs() -> None:
    registry = default_registry(examples=True)
    specs = [registry.spec("DemoPlugin.GetInvoice"), registry.spec("DemoPlugin.Total")]
    llm = ScriptedLLM([_tc("DemoPlugin.GetInvoice", company="D"),
                       _tc("DemoPlugin.Total", value1=6700, value2=6700), "13400"])
    out = ToolCallingPlanner(llm, specs, FRESH).run(
        "Add the invoice of company D to itself.", Executor(registry))
    assert [c["function"] for t in out.turns for c in t.calls] == [
        "DemoPlugin.GetInvoice", "DemoPlugin.Total"]
    assert out.answer == "13400"


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def test_real_model_later_calls_bring_something_new(default_llm) -> None:
    """On the default 1.5B model (the 0.5B makes no second call here, so it would test
    nothing), the tool-calling loop with `fresh`: whatever it calls after the first call
    passes a value the goal or a result states that no earlier call passed. The results are placeholders that answer nothing (BFCL's situation), so
    the model is tempted to call the other function with the values it already used."""
    registry = ToolRegistry()
    stub = RecordingStub()
    for name, props in [("triangle_properties.get", ["side1", "side2", "side3"]),
                        ("circle_properties.get", ["radius"])]:
        registry.add_tool(schema_tool({"type": "function", "function": {
            "name": name, "description": f"Area and perimeter ({', '.join(props)}).",
            "parameters": {"type": "object", "required": props,
                           "properties": {p: {"type": "number"} for p in props}}}}, stub))
    settings = PlannerSettings(techniques=Techniques.parse("grounded+decline+fresh+tags"))
    goal = "Find the area and perimeter of a triangle whose sides are 5, 4 and 3 units."
    out = ToolCallingPlanner(default_llm, registry.specs(), settings).run(
        goal, Executor(registry), max_iterations=4)
    made = [ToolCall(c["function"], c["args"]) for t in out.turns for c in t.calls]
    turns = [t for t in out.turns if t.calls]
    seen: list[ToolCall] = [ToolCall(c["function"], c["args"]) for c in turns[0].calls] \
        if turns else []
    results = [_text(c["result"]) for c in turns[0].calls] if turns else []
    assert fresh_first_turn(seen, goal) == tuple(seen), [c.args for c in made]
    for t in turns[1:]:
        calls = [ToolCall(c["function"], c["args"]) for c in t.calls]
        text = "\n".join([goal, *results])
        assert fresh_calls(calls, text, seen) == tuple(calls), [c.args for c in made]
        seen += calls
        results += [_text(c["result"]) for c in t.calls]
    assert out.answer is not None or out.declined, out.stop_reason
