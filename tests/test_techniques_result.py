"""The `result` technique (react, tools): answer once the head's function was the latest
call, with a result no later call took as an argument (grounding.unused_results)."""

from __future__ import annotations

from suite_grammar import SUITE

from localagent.bench.tools import build_registry
from localagent.executor import Executor
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.planners.base import PlannerSettings
from localagent.planners.coverage import Coverage
from localagent.planners.grounding import observed_values, unused_results
from localagent.planners.techniques import Techniques


def test_unused_results_are_what_no_later_call_took() -> None:
    pages = [(1, "GetPages", {"title": "Ashes of Meridian"}, 430),
             (1, "GetPages", {"title": "The Copper Orchard"}, 189),
             (2, "subtract", {"value1": 430.0, "value2": 189}, 241)]
    assert unused_results(pages) == [241]
    # a lookup repeated after the subtraction: its value counts from its first turn
    assert unused_results([*pages, (3, "GetPages", {"title": "The Copper Orchard"}, 189)]) \
        == [241]
    # a chain: the picked team went on to the next call; a call's own argument does not count
    teams = [(1, "TopTeam", {"team1": "Herons", "team2": "Lynx"}, "Herons")]
    assert unused_results(teams) == ["Herons"]
    assert unused_results([*teams, (2, "GetGoals", {"team": "Herons"}, 40)]) == [40]
    # parallel calls of one turn do not use each other's results
    same_turn = [(1, "F", {"a": "x"}, 5), (1, "G", {"a": 5}, 7)]
    assert unused_results(same_turn) == [5, 7]
    # of the unused results, the head's functions' (what the question asks for) if any
    assert unused_results(same_turn, prefer={"G"}) == [7]
    assert unused_results(same_turn, prefer={"H"}) == [5, 7]
    # of the head's results, the latest turn's (Earth's moons, Mars' moons, then Mars' again)
    moons = [(1, "GetMoons", {"planet": "Earth"}, 1), (1, "GetMoons", {"planet": "Mars"}, 2),
             (2, "FartherFromSun", {"a": "Earth", "b": "Mars"}, "Mars"),
             (3, "GetMoons", {"planet": "Mars"}, 2)]
    assert unused_results(moons) == [1, 2, 2]
    assert unused_results(moons, prefer={"GetMoons"}) == [2]
    # a number written in an expression was taken by that call
    furina = [(1, "GetPersonAge", {"name": "Furina"}, 16),
              (2, "Calculator", {"expression": "16**0.43"}, 3.294)]
    assert unused_results(furina) == [3.294]
    assert unused_results([(1, "F", {}, 16), (2, "G", {"expression": "160 + 1.16"}, 0)]) \
        == [16, 0]


def test_whole_lists_offers_a_list_of_names_only_whole() -> None:
    books = ["A Map of Small Rivers", "Paper Comets", "The Quiet Engine"]
    assert "Paper Comets" in observed_values([books])
    assert observed_values([books], whole_lists=True) == [", ".join(books)]
    assert observed_values([[3, 4]], whole_lists=True) == ["3", "4"]


GOAL = "How many more pages does Ashes of Meridian have than The Copper Orchard?"


def _tools() -> list:
    task = next(t for t in SUITE.tasks if t.goal == GOAL)
    return build_registry(task).specs()


def test_coverage_with_result_is_finished_only_after_the_head_call() -> None:
    tools = _tools()
    coverage = Coverage.of(GOAL, tools, True, head=True, result=True)
    coverage.record({"title": "Ashes of Meridian"}, "BookLibrary.GetPages")
    coverage.record({"title": "The Copper Orchard"}, "BookLibrary.GetPages")
    assert not coverage.finished(coverage.must_call(tools))
    coverage.record({"value1": 430, "value2": 189}, "MathPlugin.subtract")
    assert coverage.finished(coverage.must_call(tools))
    # a lookup after the subtraction asks for the subtraction again
    coverage.record({"title": "The Copper Orchard"}, "BookLibrary.GetPages")
    assert not coverage.finished(coverage.must_call(tools))
    assert [t.qualified_name for t in coverage.must_call(tools)] == ["MathPlugin.subtract"]
    # without `result` the head's call counts whenever it was made, and nothing finishes
    old = Coverage.of(GOAL, tools, True, head=True)
    for args, fn in (({"title": "Ashes of Meridian"}, "BookLibrary.GetPages"),
                     ({"value1": 430, "value2": 189}, "MathPlugin.subtract"),
                     ({"title": "The Copper Orchard"}, "BookLibrary.GetPages")):
        old.record(args, fn)
    assert old.must_call(tools) == [] and not old.finished(old.must_call(tools))


def _call(name: str, args: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


def test_tool_calling_answers_the_subtraction_seen_on_the_model() -> None:
    """Seen (default model, `mentions+grounded+check+cover+calls+head+nouns`): both page
    counts, the subtraction (241), the lookups again, then the answer 189. With `result`
    the turn after the subtraction must answer, and only 241 is admitted."""
    from localagent.planners.tool_calling import ToolCallingPlanner

    lookups = (_call("BookLibrary.GetPages", '{"title": "Ashes of Meridian"}') + "\n"
               + _call("BookLibrary.GetPages", '{"title": "The Copper Orchard"}'))
    subtract = _call("MathPlugin.subtract", '{"value1": 430, "value2": 189}')
    base = "mentions+grounded+decline+check+cover+calls+head+nouns+backrefs"
    # decline: the first request is the unconstrained probe; it opens a call
    llm = ScriptedLLM(["<tool_call>", lookups, subtract, "241"])
    out = ToolCallingPlanner(llm, _tools(), PlannerSettings(
        techniques=Techniques.parse(base + "+result"))).run(GOAL, Executor(
            build_registry(next(t for t in SUITE.tasks if t.goal == GOAL))))
    assert out.answer == "241" and len(llm.requests) == 4
    assert llm.requests[0].constraint is None
    last = llm.requests[3].constraint
    assert matches(last, "241") and not matches(last, "189") and not matches(last, lookups)
    # without `result` the third turn may call again or answer with a page count
    off = ScriptedLLM(["<tool_call>", lookups, subtract, "189"])
    ToolCallingPlanner(off, _tools(), PlannerSettings(
        techniques=Techniques.parse(base))).run(GOAL, Executor(
            build_registry(next(t for t in SUITE.tasks if t.goal == GOAL))))
    assert matches(off.requests[3].constraint, "189")
    assert matches(off.requests[3].constraint, lookups)


def test_react_with_result_gives_the_final_answer_after_the_head_call() -> None:
    from localagent.planners.react import ReactPlanner

    task = next(t for t in SUITE.tasks if t.goal == GOAL)
    ashes = ('Thought: t\nAction: BookLibrary.GetPages\n'
             'Action Input: {"title": "Ashes of Meridian"}')
    copper = ('Thought: t\nAction: BookLibrary.GetPages\n'
              'Action Input: {"title": "The Copper Orchard"}')
    subtract = ('Thought: t\nAction: MathPlugin.subtract\n'
                'Action Input: {"value1": 430, "value2": 189}')
    final = "Thought: t\nFinal Answer: 241"
    llm = ScriptedLLM([ashes, copper, subtract, final])
    out = ReactPlanner(llm, _tools(), PlannerSettings(techniques=Techniques.parse(
        "mentions+grounded+cover+head+result"))).run(GOAL, Executor(build_registry(task)))
    assert out.answer == "241"
    last = llm.requests[3].constraint
    assert matches(last, final) and not matches(last, "Thought: t\nFinal Answer: 189")
    assert not matches(last, ashes)
