"""Shared by the fast technique tests: the generalisation suite's tools, and whether a
planner's grammar for a goal admits a plan (no model).

Tree and sequential planners: one grammar per goal (`admits`, `admits_steps`). ReAct and
tool calling: a grammar per step, built from what the steps before observed, so
`react_admits` and `tools_admits` replay the reference plan through the planner's real
loop (real executor, a scripted model writing one call per step, then the answer) and
check each step against the constraint the planner generated it under.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from localagent.bench.suite import load_suite
from localagent.bench.tools import build_registry
from localagent.executor import Executor
from localagent.llm import ScriptedLLM
from localagent.llm.constrained import matches
from localagent.plan import call_from_dict
from localagent.planners.base import PlannerSettings
from localagent.planners.examples import flatten
from localagent.planners.grounding import observed_values
from localagent.planners.techniques import Techniques
from localagent.planners.tree import TreePlanner
from localagent.tools.registry import ToolRegistry

SUITE = load_suite(Path(__file__).resolve().parents[1] / "benchmarks" / "suites"
                   / "generalisation.yaml")
TOOLS = build_registry(SUITE.tasks[0]).specs()  # every task offers the same 28 functions


def _techniques(spec: str | Techniques) -> Techniques:
    return spec if isinstance(spec, Techniques) else Techniques.parse(spec)


def call(function: str, **args: Any) -> dict:
    """A raw tree-plan call, as the model writes it."""
    return {"function": function, "args": args}


def admits(spec: str | Techniques, goal: str, plan: dict) -> bool:
    """Whether the tree grammar for `goal` under techniques `spec` admits `plan`."""
    planner = TreePlanner(ScriptedLLM([]), TOOLS,
                          PlannerSettings(techniques=_techniques(spec)))
    grammar = planner.constraint(planner.tools_for(goal), goal)
    return matches(grammar, json.dumps(plan, separators=(", ", ": ")))


def admits_steps(spec: str | Techniques, goal: str, steps: list[dict], start: str) -> bool:
    """Whether the sequential grammar for `goal` under `spec` admits the plan of `steps`
    (raw `{"function", "args"}` steps) starting from the input `start`."""
    from localagent.planners.sequential import SequentialPlanner

    planner = SequentialPlanner(ScriptedLLM([]), TOOLS,
                                PlannerSettings(techniques=_techniques(spec)))
    grammar = planner.constraint(planner.tools_for(goal), goal)
    return matches(grammar, json.dumps({"input": start, "subtasks": steps},
                                       separators=(", ", ": ")))


@lru_cache(maxsize=1)
def suite_registry() -> ToolRegistry:
    """The registry behind TOOLS (the plugins are stateless, so one serves every replay)."""
    return build_registry(SUITE.tasks[0])


class _Rejected(Exception):
    """A replayed step the planner's constraint for that step does not admit."""


def _plain(value: Any) -> Any:
    """A value as a model writes it in JSON: a whole float as an integer (8.0 as 8)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def reference_calls(plan: dict) -> tuple[list[tuple[str, dict[str, Any]]],
                                         list[set[int]], Any]:
    """The calls of a raw tree plan in evaluation order, each `$k` replaced by the value
    step k returned (as a ReAct or tool-calling run passes it on); for each call, the
    indices of the calls whose results it takes; and the value of the last call (the
    plan's). The real executor runs each call."""
    executor = Executor(suite_registry())
    calls: list[tuple[str, dict[str, Any]]] = []
    needs: list[set[int]] = []
    values: list[Any] = []

    def resolve(value: Any, used: set[int]) -> Any:
        if isinstance(value, str) and value.startswith("$") and value[1:].isdigit():
            used.add(int(value[1:]) - 1)
            return values[int(value[1:]) - 1]
        if isinstance(value, list):
            return [resolve(v, used) for v in value]
        return value

    for step in flatten(plan):
        used: set[int] = set()
        args = {k: _plain(resolve(v, used)) for k, v in step["args"].items()}
        result = executor.run_call_sync(call_from_dict({"function": step["function"],
                                                        "args": args}))
        assert result.ok, (step, result.error)
        calls.append((step["function"], args))
        needs.append(used)
        values.append(result.value)
    return calls, needs, values[-1]


def call_orders(needs: list[set[int]]) -> list[list[int]]:
    """Every order of the calls in which each comes after the calls it takes results
    from (the plan's own order first): the ways one call per step can carry out a plan."""
    def extend(done: list[int]) -> list[list[int]]:
        if len(done) == len(needs):
            return [done]
        ready = [i for i in range(len(needs)) if i not in done and needs[i] <= set(done)]
        return [order for i in ready for order in extend([*done, i])]

    return extend([])


def _replay(make: Any, goal: str, texts: list[str], max_iterations: int) -> str | None:
    """Run the planner `make(llm)` builds on `goal` with a model `llm` that writes
    `texts` in turn; None when every text was admitted by the constraint it was
    generated under and the run answered with the last one, else which step was refused
    and why."""
    pending = deque(texts)
    written: list[str] = []

    def respond(request: Any) -> str:
        step = len(texts) - len(pending) + 1
        if request.constraint is None and written:
            # a free turn (`native`) constrains nothing: it writes the turn just admitted
            return written[-1]
        if not pending:
            raise _Rejected(f"step {step}: asked for more after the reference answer")
        if request.constraint is not None and not matches(request.constraint, pending[0]):
            raise _Rejected(f"step {step} of {len(texts)} not admitted: {pending[0]!r}")
        written.append(pending.popleft())
        return written[-1]

    planner = make(ScriptedLLM(responder=respond))
    try:
        out = planner.run(goal, Executor(suite_registry()), max_iterations=max_iterations)
    except _Rejected as exc:
        return str(exc)
    if pending or out.answer is None:
        return f"stopped after step {len(texts) - len(pending)}: {out.stop_reason}"
    return None


def _answer_text(value: Any) -> str:
    """The reference answer as a grounded answer renders it (a list of names whole)."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return observed_values([value])[0]


def _replay_orders(make: Any, goal: str, plan: dict, call_text: Any, answer_text: Any,
                   max_iterations: int) -> str | None:
    """None when some order of the plan's calls (`call_orders`), one per step, then the
    answer, is admitted step by step; else why the plan's own order was refused."""
    calls, needs, answer = reference_calls(plan)
    first = None
    for order in call_orders(needs):
        texts = [call_text(*calls[i]) for i in order] + [answer_text(_answer_text(answer))]
        why = _replay(make, goal, texts, max_iterations)
        if why is None:
            return None
        first = first or why
    return first


def react_admits(spec: str | Techniques, goal: str, plan: dict,
                 max_iterations: int = 5) -> str | None:
    """Whether the ReAct planner under `spec` admits `plan` for `goal`: one action per
    step, in some order the plan allows, then the plan's value as the final answer.
    None when it does, else the step refused in the plan's own order."""
    from localagent.planners.react import ReactPlanner

    def action(function: str, args: dict[str, Any]) -> str:
        return (f"Thought: t\nAction: {function}\nAction Input: "
                + json.dumps(args, ensure_ascii=False, separators=(", ", ": ")))

    settings = PlannerSettings(techniques=_techniques(spec))
    return _replay_orders(lambda llm: ReactPlanner(llm, TOOLS, settings), goal, plan,
                          action, lambda text: f"Thought: t\nFinal Answer: {text}",
                          max_iterations)


def tools_admits(spec: str | Techniques, goal: str, plan: dict,
                 max_iterations: int = 5) -> str | None:
    """As `react_admits`, for the tool-calling planner: one call per turn, then the
    plan's value as the text of the last turn."""
    from localagent.planners.tool_calling import ToolCallingPlanner

    def tool_call(function: str, args: dict[str, Any]) -> str:
        return ("<tool_call>\n" + json.dumps({"name": function, "arguments": args},
                                              ensure_ascii=False) + "\n</tool_call>")

    # `decline`'s probe is unconstrained (no grammar to admit anything): left out, so the
    # scripted turns meet the constrained turns they are checked against
    settings = PlannerSettings(techniques=replace(_techniques(spec), decline=False))
    return _replay_orders(lambda llm: ToolCallingPlanner(llm, TOOLS, settings), goal, plan,
                          tool_call, lambda text: text, max_iterations)
