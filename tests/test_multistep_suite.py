"""The multi-step suite (issue 44, item 6): it loads, every goal comes in three languages,
and every reference plan gives the expected answer when the real executor runs it on the
real record-returning plugin. No model is loaded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from localagent.bench.compare import judge
from localagent.bench.suite import Task, load_suite
from localagent.bench.tools import build_registry
from localagent.executor import Executor
from localagent.plan import plan_from_dict

SUITE = load_suite(Path(__file__).resolve().parent.parent / "benchmarks" / "suites"
                   / "multistep.yaml")


def calls_in(node) -> int:
    if isinstance(node, dict):
        return ("function" in node) + sum(calls_in(v) for v in node.values())
    return sum(calls_in(v) for v in node) if isinstance(node, list) else 0


def test_every_goal_is_asked_in_three_languages() -> None:
    goals = Counter(task.id.split("@")[0] for task in SUITE.tasks)
    assert len(goals) >= 8 and set(goals.values()) == {3}
    assert {task.language for task in SUITE.tasks} == {"en", "es", "de"}


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda t: t.id)
def test_solution_gives_the_expected_answer(task: Task) -> None:
    assert task.solution is not None
    assert 2 <= calls_in(task.solution) <= 4  # every goal is a chain
    result = Executor(build_registry(task)).run_sync(plan_from_dict(task.solution))
    assert result.ok, result.error
    assert judge(task, result.value, {}) is None, (result.value, task.expect)
    assert judge(task, -1, {}) is not None  # a wrong answer is rejected
