"""The generalisation suite (issue 8): it loads, its reference plans give the expected
answers when run by the real executor on the real plugins, and none of its functions
appears in a prompt the planners show (the suite must test planning, not recall).

No model is loaded: the `solution` of each task is a hand-written reference plan.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from localagent.bench.compare import judge
from localagent.bench.suite import Task, load_suite
from localagent.bench.tools import build_registry
from localagent.constraint import Constraint
from localagent.errors import UsageError
from localagent.executor import Executor
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.plan import plan_from_dict
from localagent.planners.base import PlannerSettings
from localagent.planners.examples import flatten
from localagent.planners.sequential import SequentialPlanner
from localagent.planners.techniques import Techniques
from localagent.planners.tree import TreePlanner
from localagent.tools.plugins import import_file
from localagent.tools.registry import ToolRegistry

REPO = Path(__file__).resolve().parent.parent
SUITE_PATH = REPO / "benchmarks" / "suites" / "generalisation.yaml"
PROMPTS = REPO / "localagent" / "planners" / "prompts.py"
LIBRARY = REPO / "localagent" / "planners" / "library"
CATEGORIES = {"lookup", "arithmetic", "chain", "conditional", "list"}
MATH = "MathPlugin."

SUITE = load_suite(SUITE_PATH)
TASKS = {task.id: task for task in SUITE.tasks}


@lru_cache(maxsize=1)
def registry() -> ToolRegistry:
    """Every task offers the same tools (checked below), so one registry serves them all."""
    return build_registry(SUITE.tasks[0])


def calls_in(node: Any) -> list[str]:
    """The function of every call in a raw tree plan, outermost first."""
    if isinstance(node, dict):
        own = [node["function"]] if "function" in node else []
        return own + [f for value in node.values() for f in calls_in(value)]
    if isinstance(node, list):
        return [f for value in node for f in calls_in(value)]
    return []


def mentions(name: str, text: str) -> bool:
    """`name` appears in `text` as a whole word (so `Add` does not match `Address`)."""
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def prompt_texts() -> dict[str, str]:
    """The prompt templates and every solved-example file the planners may show."""
    texts = {str(PROMPTS.relative_to(REPO)): PROMPTS.read_text(encoding="utf-8")}
    if LIBRARY.is_dir():
        for path in sorted(LIBRARY.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                texts[str(path.relative_to(REPO))] = path.read_text("utf-8", errors="ignore")
    return texts


def test_suite_shape() -> None:
    assert len(SUITE.tasks) >= 40
    counts = Counter(task.category for task in SUITE.tasks)
    assert set(counts) == CATEGORIES, counts
    assert min(counts.values()) >= 5, counts
    assert all(task.id.startswith(f"{task.category}-") for task in SUITE.tasks)
    plugins = {name.split(".")[0] for name in registry().names() if not name.startswith(MATH)}
    assert len(plugins) >= 6, plugins


def test_every_task_offers_the_same_tools() -> None:
    first = SUITE.tasks[0]
    assert all((t.plugins, t.exclude) == (first.plugins, first.exclude) for t in SUITE.tasks)
    names = registry().names()
    assert {n for n in names if n.startswith(MATH)} == {
        f"{MATH}{f}" for f in ("add", "subtract", "multiply", "divide")
    }
    assert 24 <= len(names) <= 30, names


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda t: t.id)
def test_solution_gives_the_expected_answer(task: Task) -> None:
    assert task.solution is not None, "every task needs a reference plan"
    functions = calls_in(task.solution)
    assert 1 <= len(functions) <= 4, functions
    assert set(functions) <= set(registry().names()), functions
    if task.category != "arithmetic":
        assert any(not f.startswith(MATH) for f in functions)
    result = Executor(build_registry(task)).run_sync(plan_from_dict(task.solution))
    assert result.ok, result.error
    assert judge(task, result.value, {}) is None, (result.value, task.expect)
    # The expectation can fail: a wrong answer is rejected.
    assert judge(task, -1, {}) is not None
    assert judge(task, "I do not know", {}) is not None


def test_conditional_pickers_agree_with_the_lookups() -> None:
    """TopTeam / FartherFromSun decide by the very values GetPoints / GetDistance return."""
    run = Executor(registry()).run_sync

    def value(function: str, **args: Any) -> Any:
        result = run(plan_from_dict({"function": function, "args": args}))
        assert result.ok, result.error
        return result.value

    pickers = [
        ("League.TopTeam", "team", "League.GetPoints", ["Falcons", "Otters", "Lynx", "Badgers"]),
        ("Planets.FartherFromSun", "planet", "Planets.GetDistance", ["Venus", "Mars", "Saturn"]),
    ]
    for picker, arg, lookup, names in pickers:
        for a, b in itertools.permutations(names, 2):
            chosen = value(picker, **{f"{arg}_a": a, f"{arg}_b": b})
            va, vb = value(lookup, **{arg: a}), value(lookup, **{arg: b})
            assert chosen == (a if va > vb else b), (picker, a, b)


def test_unknown_keys_fail_with_the_known_ones() -> None:
    """A plugin called directly with an unknown key says which keys exist."""
    staff = import_file(SUITE_PATH.parent / "plugins" / "staff.py").Staff()
    with pytest.raises(ValueError, match="known employees: Tomasz, Ingrid"):
        staff.get_salary("Zed")
    with pytest.raises(ValueError, match="Tomasz is the director"):
        staff.get_manager("Tomasz")


def test_no_suite_function_appears_in_a_prompt() -> None:
    texts = prompt_texts()
    suite_names = [n for n in registry().names() if not n.startswith(MATH)]
    leaks = [
        f"{name} in {where}"
        for name in suite_names
        for candidate in (name, name.split(".", 1)[1])
        for where, text in texts.items()
        if mentions(candidate, text)
    ]
    assert not leaks, leaks


def test_the_separation_search_can_fail() -> None:
    """The search above finds a name a prompt does use, and only as a whole word."""
    source = PROMPTS.read_text(encoding="utf-8")
    assert mentions("GetStock", source)
    assert mentions("Inventory.GetStock", source)
    assert not mentions("Stock", "Inventory.GetStock is here")
    assert not mentions("GetStock", "GetStockLevel")
    assert mentions("GetPages", "then call BookLibrary.GetPages(title)")  # a bare-name leak


def test_solution_must_be_a_plan_mapping(tmp_path: Path) -> None:
    body = (
        "tasks:\n  - {id: t, goal: g, plugins: [MathPlugin], expect: {number: 1}, solution: %s}\n"
    )
    good = tmp_path / "good.yaml"
    good.write_text(body % "{function: MathPlugin.add, args: {value1: 1, value2: 0}}")
    assert load_suite(good).tasks[0].solution == {
        "function": "MathPlugin.add",
        "args": {"value1": 1, "value2": 0},
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text(body % "MathPlugin.add")
    with pytest.raises(UsageError, match="'solution' must be a plan mapping"):
        load_suite(bad)


# --- the grammar techniques never rule out a reference plan ----------------------------

def _grammar(task: Task, spec: str, planner_class: Any = TreePlanner) -> Constraint:
    """The plan grammar `planner_class` builds for the task's goal, all 28 tools offered."""
    planner = planner_class(ScriptedLLM([]), build_registry(task).specs(),
                            PlannerSettings(techniques=Techniques.parse(spec)))
    return planner.constraint(planner.tools_for(task.goal), task.goal)


def _compact(plan: Any) -> str:
    return json.dumps(plan, separators=(", ", ": "))


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda t: t.id)
def test_every_technique_grammar_admits_the_reference_plan(task: Task) -> None:
    """`mentions`, typed nesting (declared return values), `values`, `shallow` and
    `numbers` narrow the tree grammar; a narrowing that forbade a right plan would cost
    accuracy silently."""
    plan = _compact(task.solution)
    assert matches(_grammar(task, "mentions+values"), plan)
    assert matches(_grammar(task, "mentions+shallow"), plan)
    assert matches(_grammar(task, "mentions+values+shallow+numbers"), plan)


def test_typed_nesting_rejects_the_wrong_plan_seen_on_the_model() -> None:
    """Plans the default model wrote (results of the generalisation suite, stop 12)."""
    plan = _compact

    def call(function: str, **args: Any) -> dict:
        return {"function": function, "args": args}

    mileage = TASKS["lookup-mileage-bison"]  # GetDriver returns people, not vehicles
    wrong = call("Fleet.GetMileage", vehicle=call("Fleet.GetDriver", vehicle="Bison"))
    right = call("Fleet.GetMileage", vehicle="Bison")
    grammar = _grammar(mileage, "mentions")
    assert matches(grammar, plan(right)) and not matches(grammar, plan(wrong))


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda t: t.id)
def test_sequential_grammar_admits_the_reference_plan_as_steps(task: Task) -> None:
    """The same for the sequential planner: the reference plan flattened into steps
    (inner calls first, `$k` for a result) is admitted, its references are in ascending
    order (`ordered`) and each stands where its step's result fits (`typed`)."""
    text = _compact({"input": "", "subtasks": flatten(task.solution)})
    for spec in ("mentions+backrefs", "mentions+backrefs+ordered", "mentions+backrefs+typed",
                 "mentions+backrefs+typed+ordered", "mentions+backrefs+typed+distinct"):
        assert matches(_grammar(task, spec, SequentialPlanner), text), (spec, text)
