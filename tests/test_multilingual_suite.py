"""The multilingual paraphrase suite (issue 20): every generalisation goal in two more
English phrasings and in Spanish, German, French and Chinese, plus goals no tool can
answer.

Checked without a model: each original task has all seven variants with its expectation,
reference plan and tools; the reference plans give the expected answers; a `declined`
expectation holds only for a run without an answer; and the invariant: for every planner
the grammar built with its default techniques (read at run time) admits the reference
plan of every goal, in every phrasing and language. A technique that reads the English
words of a goal fails it; one derived from the tools, the stated values or the results
does not.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from suite_grammar import SUITE as ORIGINAL
from suite_grammar import admits, admits_steps, react_admits, tools_admits

from localagent.bench.compare import judge
from localagent.bench.suite import Task, load_suite
from localagent.bench.tools import build_registry
from localagent.errors import UsageError
from localagent.executor import Executor
from localagent.plan import plan_from_dict
from localagent.planners.examples import flatten
from localagent.planners.techniques import default_techniques

REPO = Path(__file__).resolve().parent.parent
SUITE = load_suite(REPO / "benchmarks" / "suites" / "multilingual.yaml")
LANGUAGES = {"en": "en", "en2": "en", "en3": "en", "es": "es", "de": "de", "fr": "fr",
             "zh": "zh"}
VARIANTS = tuple(LANGUAGES)
PLANNERS = ("tree", "sequential", "react", "tools")
TASKS = {task.id: task for task in SUITE.tasks}
UNANSWERABLE = [task for task in SUITE.tasks if task.category == "unanswerable"]


def variant(original: Task, name: str) -> Task:
    return TASKS[f"{original.id}@{name}"]


def literals(node: object) -> list[object]:
    """The literal arguments of a raw tree plan (names, titles, numbers), not its calls."""
    if isinstance(node, dict):
        if "function" in node:
            return literals(node.get("args", {}))
        return [v for value in node.values() for v in literals(value)]
    if isinstance(node, list):
        return [v for value in node for v in literals(value)]
    return [node]


def test_every_original_task_has_seven_variants_with_its_plan() -> None:
    originals = {task.id for task in ORIGINAL.tasks}
    ids = [task.id.partition("@") for task in SUITE.tasks if task not in UNANSWERABLE]
    assert all(sep and name in VARIANTS and base in originals for base, sep, name in ids)
    assert Counter(name for _, _, name in ids) == {name: len(originals) for name in VARIANTS}
    for original in ORIGINAL.tasks:
        goals = set()
        for name in VARIANTS:
            task = variant(original, name)
            same = ("category", "plugins", "exclude", "filter", "expect", "solution",
                    "max_iterations", "distractors")
            assert all(getattr(task, key) == getattr(original, key) for key in same), task.id
            assert task.language == LANGUAGES[name], task.id
            goals.add(task.goal)
        assert variant(original, "en").goal == original.goal
        assert len(goals) == len(VARIANTS), original.id  # seven different goals


def test_every_variant_states_the_plans_values_verbatim() -> None:
    """The tools take names, titles and numbers verbatim, so a translation keeps them as
    the original states them (Kenya, Neptune, The Salt Road, 250)."""
    missing = []
    for original in ORIGINAL.tasks:
        values = [v for v in literals(original.solution) if str(v) in original.goal]
        for name in VARIANTS:
            goal = variant(original, name).goal
            missing += [(original.id, name, v) for v in values if str(v) not in goal]
    assert not missing, missing


@pytest.mark.parametrize("original", ORIGINAL.tasks, ids=lambda t: t.id)
def test_reference_plan_gives_the_expected_answer(original: Task) -> None:
    task = variant(original, "en")
    result = Executor(build_registry(task)).run_sync(plan_from_dict(task.solution))
    assert result.ok, result.error
    assert judge(task, result.value, {}) is None, (result.value, task.expect)


def test_unanswerable_goals_expect_the_run_to_decline() -> None:
    assert len(UNANSWERABLE) >= 6
    assert len({task.language for task in UNANSWERABLE}) >= 4
    for task in UNANSWERABLE:
        assert task.declines and task.solution is None, task.id
        assert task.id.endswith(f"@{task.language}"), task.id
        assert (task.plugins, task.exclude) == (ORIGINAL.tasks[0].plugins,
                                                ORIGINAL.tasks[0].exclude)
        assert judge(task, None, {"error": "planning failed: no tool fits"}) is None
        for answer in ("Sunny, 24 degrees", 0, "I cannot answer that", [], False):
            assert judge(task, answer, {}) is not None, (task.id, answer)
    assert not any(task.declines for task in SUITE.tasks if task not in UNANSWERABLE)


def test_declined_and_language_keys_are_checked(tmp_path: Path) -> None:
    def suite(task: str) -> Path:
        path = tmp_path / "suite.yaml"
        path.write_text(f"tasks:\n  - {{id: t, goal: g, plugins: [MathPlugin], {task}}}\n")
        return path

    task = load_suite(suite("expect: {declined: true}, language: de")).tasks[0]
    assert task.declines and task.language == "de"
    assert load_suite(suite("expect: {number: 1}")).tasks[0].language == "en"
    assert judge(task, None, {}) is None and judge(task, 1, {}) is not None
    with pytest.raises(UsageError, match="'declined' takes only true"):
        load_suite(suite("expect: {declined: false}"))
    with pytest.raises(UsageError, match="cannot be combined"):
        load_suite(suite("expect: [{declined: true}, {number: 1}]"))
    with pytest.raises(UsageError, match="'language' must be"):
        load_suite(suite("expect: {number: 1}, language: ''"))
    answered = load_suite(suite("expect: {number: 1}")).tasks[0]
    assert judge(answered, None, {"error": "boom"}) == "no answer (boom)"


# --- the invariant: no default technique rules out a reference plan ------------------

def refusal(planner: str, task: Task) -> str | None:
    """None when `planner`, with its default techniques as they are now, admits the
    task's reference plan for the task's goal; else why not."""
    techniques, plan = default_techniques(planner), task.solution
    assert plan is not None
    if planner == "tree":
        return None if admits(techniques, task.goal, plan) else "the plan grammar refuses it"
    if planner == "sequential":
        ok = admits_steps(techniques, task.goal, flatten(plan), "")
        return None if ok else "the steps grammar refuses it"
    replay = react_admits if planner == "react" else tools_admits
    return replay(techniques, task.goal, plan, max_iterations=task.max_iterations)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("planner", PLANNERS)
def test_default_grammar_admits_every_reference_plan(planner: str, name: str) -> None:
    """Every phrasing and language, no goal left out: a refused reference plan is a right
    plan the planner can never write, whatever the model (ReAct and tool calling: in no
    order of its calls, one per step)."""
    refused = {}
    for original in ORIGINAL.tasks:
        task = variant(original, name)
        if (why := refusal(planner, task)) is not None:
            refused[task.id] = f"{task.goal!r}: {why}"
    assert not refused, (f"{planner} ({default_techniques(planner).label}) refuses "
                         f"{len(refused)}/{len(ORIGINAL.tasks)} reference plans: {refused}")


def test_the_admission_checks_can_fail() -> None:
    """With `mentions`, a name the goal does not state is refused by every planner."""
    goal, guessed = "What is Leena's yearly salary?", {
        "function": "Staff.GetSalary", "args": {"name": "Tomasz"}}
    assert not admits("mentions", goal, guessed)
    assert not admits_steps("mentions+backrefs", goal, flatten(guessed), "")
    assert react_admits("mentions", goal, guessed) is not None
    assert tools_admits("mentions", goal, guessed) is not None
    assert react_admits("plain", goal, guessed) is None  # plain admits any valid call
    assert tools_admits("plain", goal, guessed) is None


def test_literals_reads_arguments_not_function_names() -> None:
    plan = {"function": "MathPlugin.divide", "args": {
        "value1": {"function": "Fleet.GetConsumption", "args": {"vehicle": "Dingo"}},
        "value2": 100}}
    assert literals(plan) == ["Dingo", 100]
