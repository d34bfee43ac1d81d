"""The ReAct loop (LangChain's zero-shot format): Thought / Action / Action Input /
Observation ... Final Answer.

The model writes one step under the `react_step` grammar; the executor runs the action;
the observation is appended; repeat until a Final Answer or `max_iterations`. On the last
allowed iteration the grammar admits only a Final Answer. A step that asks for a call the run
has already made (same function, same arguments) is written once more without that
function, since the call could only bring back an observation the transcript holds; an
action that is repeated all the same and brings the same observation again stops the loop
with that reason.

The prompt of step k+1 is the prompt of step k plus the text of step k and its
observation, so the llama backend's KV cache holds the whole prefix and evaluates only the
new tokens (DESIGN.md trap 3); `reuse_cache=False` resets the cache before every step, to
measure the difference.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.executor import Executor
from localagent.grammars import ReactStep, parse_react, react_step
from localagent.llm.base import LLM
from localagent.plan import literal_call
from localagent.planners.base import (
    GenerationLog,
    PlannerEvent,
    PlannerSettings,
    generate_checked,
)
from localagent.planners.coverage import Coverage
from localagent.planners.decline import goal_declined
from localagent.planners.grounding import observed_values
from localagent.planners.mentions import anchor_to_goal
from localagent.planners.prompts import NO_TOOL_ANSWER, react_header
from localagent.tools.spec import ToolSpec

STOP = ("\nObservation:",)
NO_TOOL_MESSAGE = "declined: the model answered that no offered tool answers the question"
OBSERVATION_CHARS = 600


@dataclass(frozen=True)
class ReactTurn:
    """One step: the model's text, what it asked for, and what came back."""

    thought: str
    function: str | None = None
    args: dict[str, Any] | None = None
    observation: Any = None
    error: str | None = None
    final_answer: str | None = None
    # where the observation came from (`trace.Source`): "tool" marks a function's output,
    # untrusted data however it reads; "recorded", "dry_run", "refused" for side effects
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class ReactOutcome:
    answer: str | None
    turns: list[ReactTurn] = field(default_factory=list)
    stop_reason: str = ""
    log: GenerationLog = field(default_factory=GenerationLog)
    events: list[Any] = field(default_factory=list)


def observation_text(value: Any, error: str | None) -> str:
    """What the model reads after `Observation: `: the value as JSON, or the error."""
    text = f"error: {error}" if error else (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    text = " ".join(str(text).split())
    return text if len(text) <= OBSERVATION_CHARS else text[:OBSERVATION_CHARS - 3] + "..."


def step_text(step: ReactStep) -> str:
    """The step as the transcript keeps it (the same text the grammar makes the model write)."""
    if step.final_answer is not None:
        return f"Thought: {step.thought}\nFinal Answer: {step.final_answer}"
    assert step.action is not None
    args = json.dumps(step.action.args, ensure_ascii=False, separators=(", ", ": "))
    return f"Thought: {step.thought}\nAction: {step.action.function}\nAction Input: {args}"


class ReactPlanner:
    """Runs the ReAct loop; the executor runs every action (the planner never calls tools)."""

    kind = "react"

    def __init__(self, llm: LLM, tools: Sequence[ToolSpec],
                 settings: PlannerSettings | None = None, *,
                 reuse_cache: bool = True, max_tokens: int = 200) -> None:
        self.llm, self.tools = llm, list(tools)
        self.settings, self.techniques = (settings or PlannerSettings()).for_planner(self.kind)
        self.reuse_cache, self.max_tokens = reuse_cache, max_tokens

    def next_step(self, prompt: str, final_only: bool, log: GenerationLog,
                  finals: list[str] | None = None,
                  tools: list[ToolSpec] | None = None, must_act: bool = False,
                  may_decline: bool = False) -> ReactStep:
        """The model's next step after `prompt` (the header plus the transcript so far).

        `finals`: with grounded answers, the values a Final Answer may restate ([]: none
        observed yet, so the step must act unless it is the last one); None: free text.
        `tools`: the functions as this step may call them (narrowed by `mentions`).
        `must_act`: no Final Answer in this step (unless it is the last one: `values`).
        `may_decline` (the `decline` technique, first step): besides an action, the only
        Final Answer admitted is the refusal `NO_TOOL_ANSWER`.
        """
        tools = self.tools if tools is None else tools
        if not self.reuse_cache and hasattr(self.llm, "reset_cache"):
            self.llm.reset_cache()
        if may_decline and not must_act and not final_only:
            constraint = react_step(tools, allowed_finals=[NO_TOOL_ANSWER])
        elif must_act and not final_only:
            constraint = react_step(tools, allow_final=False)
        elif finals is not None and (finals or not final_only):
            constraint = react_step(tools, final_only=final_only,
                                    allowed_finals=finals or None, allow_final=bool(finals))
        else:
            constraint = react_step(tools, final_only=final_only)

        def parse(text: str) -> ReactStep:
            step = parse_react(text, tools)
            if final_only and self.settings.constrain and step.final_answer is None:
                from localagent.errors import PlanValidationError

                raise PlanValidationError("the last iteration must give a Final Answer")
            return step

        return generate_checked(self.llm, prompt, parse, self.settings, log,
                                constraint=constraint, stop=STOP, max_tokens=self.max_tokens)

    def _step_tools(self, goal: str, observed: list[Any]) -> list[ToolSpec]:
        """With `mentions`, keys and numbers of an action must come from the goal or from
        an observation (ReAct has no nesting: a looked-up value is an observation)."""
        if not self.techniques.mentions:
            return self.tools
        seen = "\n".join(observation_text(v, None) for v in observed)
        return anchor_to_goal(self.tools, f"{goal}\n{seen}")

    def run(self, goal: str, executor: Executor, *, max_iterations: int = 5,
            on_event: Callable[[Any], None] | None = None) -> ReactOutcome:
        out = ReactOutcome(answer=None)
        emit = _emitter(out, on_event)
        shown = self.settings.framed(goal)  # after a conversation's earlier turns
        if self.techniques.decline and goal_declined(self.llm, shown, self.tools,
                                                     self.settings, out.log):
            emit("react_step", {"declined": True})
            out.stop_reason = NO_TOOL_MESSAGE
            return out
        prompt = react_header(shown, self.tools, self.llm, decline=self.techniques.decline)
        seen: dict[tuple[str, str], str] = {}
        grounded = self.techniques.grounded
        t = self.techniques
        coverage = Coverage.of(goal, self.tools, t.values)
        observed: list[Any] = []
        for i in range(1, max_iterations + 1):
            finals = observed_values(observed) if grounded else None
            step_tools = self._step_tools(goal, observed)
            must_call = coverage.must_call(step_tools)
            offered = must_call or step_tools

            how: dict[str, Any] = {
                "final_only": i == max_iterations,
                "log": out.log, "finals": finals, "must_act": bool(must_call),
                "may_decline": t.decline and i == 1}
            step = self.next_step(prompt, tools=offered, **how)
            if step.action is not None and _call_key(step.action) in seen:
                # The same call again brings the same observation again: the step is
                # written once more without that function (when another one is left).
                others = [s for s in offered if s.qualified_name != step.action.function]
                if others:
                    emit("react_repeat", {"function": step.action.function,
                                          "args": step.action.args})
                    step = self.next_step(prompt, tools=others, **how)
            prompt += step_text(step)
            if t.decline and i == 1 and step.final_answer == NO_TOOL_ANSWER:
                out.turns.append(ReactTurn(step.thought, final_answer=step.final_answer))
                emit("react_step", {**out.turns[-1].to_dict(), "declined": True})
                out.stop_reason = NO_TOOL_MESSAGE
                return out
            if step.final_answer is not None:
                out.turns.append(ReactTurn(step.thought, final_answer=step.final_answer))
                emit("react_step", out.turns[-1].to_dict())
                out.answer, out.stop_reason = step.final_answer, "final answer"
                return out
            assert step.action is not None
            emit("react_thought", {"thought": step.thought})  # before the call it leads to
            call = literal_call(step.action.function, step.action.args)
            coverage.record(step.action.args)
            result = executor.run_call_sync(call, on_event=on_event)
            out.events.extend(result.events)
            error = result.error.message if result.error else None
            if error is None:
                observed.append(result.value)
            obs = observation_text(result.value, error)
            out.turns.append(ReactTurn(step.thought, step.action.function, step.action.args,
                                       result.value, error, source=result.source))
            emit("react_step", out.turns[-1].to_dict())
            key = _call_key(step.action)
            if seen.get(key) == obs:
                out.stop_reason = (f"repeated action {step.action.function} with the same "
                                   f"arguments and the same observation")
                return out
            seen[key] = obs
            prompt += f"\nObservation: {obs}\n"
        out.stop_reason = f"no final answer within {max_iterations} iterations"
        return out


def _call_key(action: Any) -> tuple[str, str]:
    """A call's identity: its function and its arguments, order-independent."""
    return action.function, json.dumps(action.args, sort_keys=True)


def _emitter(out: ReactOutcome | Any,
             on_event: Callable[[Any], None] | None) -> Callable[[str, dict[str, Any]], None]:
    def emit(kind: str, detail: dict[str, Any]) -> None:
        event = PlannerEvent(kind, detail, time.monotonic())
        out.events.append(event)
        if on_event is not None:
            on_event(event)

    return emit
