"""The tool-calling loop (OpenAI style) with the model's own chat template and tool format.

Each turn the model sees the conversation rendered by its chat template with the tools'
OpenAI schemas, and writes one or more tool calls (Hermes/Qwen `<tool_call>` blocks under
the `tool_call_turn` grammar) or a plain-text answer. Calls of one turn run in parallel in
the executor; each result goes back as a `tool` message carrying the id of the call it
answers. A text answer ends the loop; so does `max_iterations` (on the last turn the
grammar admits only text). A turn that repeats the previous turn's calls with the same
results makes the next turn the last: it must answer from what the calls returned.
With grounded answers (`grounded`), the first turn must call a tool, and an answer
restates an observed value; on the last turn (where it must answer) a part of an object
result is written after its path (`total: 42.5`, `grounding.observed_answers`; the answer
is the value), on the others either way; with `decline`, the
model is first asked whether it would call one at all (`declines`). If it would answer in prose
instead, the run ends declined ("no offered tool fits"), with no answer. With `native`,
the first turn is also written freely by the model alone (`native.py`), and its
argument values run where it calls the same functions as the constrained turn (`agreed`).
With `tags`, a call is written only in the chat template's own tags (there the model
writes one call per part of a goal in several parts). With `fresh`, a call after the first
runs only where it passes something new (a value a result shows, or one the goal states
that no call passed yet, `fresh.py`); a later turn with none is written again as the last
one, which answers. The defaults per model: `techniques.default_techniques`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from localagent.errors import PlanValidationError
from localagent.executor import ExecutionResult, Executor
from localagent.grammar.common import HERMES
from localagent.grammar.jsonlark import Bounds
from localagent.grammars import (
    ToolCall,
    ToolCallTurn,
    args_errors,
    parse_tool_calls,
    text_answer,
    tool_call_turn,
)
from localagent.llm.base import LLM, Message
from localagent.plan import literal_call
from localagent.planners.base import (
    GenerationLog,
    PlannerEvent,
    PlannerSettings,
    generate_checked,
)
from localagent.planners.coverage import Coverage
from localagent.planners.decline import Thresholds, calls_invented, first_turn, probe
from localagent.planners.fresh import fresh_calls, fresh_first_turn
from localagent.planners.grounding import answer_choice, observed_answers
from localagent.planners.mentions import anchor_to_goal
from localagent.planners.native import NativeReply, native_reply, wrap_bare_calls
from localagent.planners.observe import is_record, observe
from localagent.planners.stated import stated_share, without_unstated_options
from localagent.tools.manual import openai_tools
from localagent.tools.spec import ToolSpec

MAX_CALLS_PER_TURN = 4
TAGS_ONLY = replace(HERMES, blocks=())  # `tags`: the template's own tags, nothing else
ANSWER_ONLY = text_answer(400)


@dataclass(frozen=True)
class ToolTurn:
    """One model turn: the calls it made (with ids and results) or its answer."""

    calls: tuple[dict[str, Any], ...] = ()
    answer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"calls": list(self.calls), "answer": self.answer}


@dataclass
class ToolCallingOutcome:
    answer: str | None
    turns: list[ToolTurn] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    stop_reason: str = ""
    log: GenerationLog = field(default_factory=GenerationLog)
    events: list[Any] = field(default_factory=list)
    declined: bool = False  # the model answered that no offered tool fits the goal


def result_content(result: ExecutionResult) -> str:
    """A tool message's content: the value as JSON, or the error as data for the model."""
    if result.error is not None:
        return json.dumps({"error": result.error.message}, ensure_ascii=False)
    value = result.value
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ToolCallingPlanner:
    """Runs the tool-calling loop; the executor runs each turn's calls concurrently."""

    kind = "tools"

    def __init__(self, llm: LLM, tools: Sequence[ToolSpec],
                 settings: PlannerSettings | None = None, *,
                 max_tokens: int = 300) -> None:
        self.llm, self.tools = llm, list(tools)
        self.settings, self.techniques = (settings or PlannerSettings()).for_planner(
            self.kind, llm.info.name)
        self.max_tokens = max_tokens
        self.schemas = openai_tools(self.tools)

    def next_turn(self, messages: Sequence[Message], last: bool,
                  log: GenerationLog, answers: list[str] | None = None,
                  must_call: Sequence[ToolSpec] = (),
                  tools: Sequence[ToolSpec] | None = None) -> ToolCallTurn:
        """The model's next turn. `answers`: with grounded answers, the values a text answer
        may restate ([]: none observed yet, so the turn must call a tool unless it is the
        last); None: free text. `must_call`: with `values`, the turn must call one of these
        (they take a value the goal states that no call used yet), unless it is the last.
        At most MAX_CALLS_PER_TURN calls. `tools`: the functions as the grammar admits
        their calls (narrowed by `mentions`); the model's chat template still shows them
        as declared."""
        max_calls = MAX_CALLS_PER_TURN
        callable_ = list(tools) if tools is not None else self.tools
        if must_call:
            names = {t.qualified_name for t in must_call}
            must_call = [t for t in callable_ if t.qualified_name in names]
        if last:
            constraint = answer_choice(answers) if answers else ANSWER_ONLY
        else:
            constraint = tool_call_turn(
                list(must_call) or callable_, max_calls=max_calls,
                call_format=TAGS_ONLY if self.techniques.tags else HERMES,
                bounds=Bounds(max_text=400),
                allow_answer=not must_call and (answers is None or bool(answers)),
                allowed_answers=answers or None)

        def parse(text: str) -> ToolCallTurn:
            turn = parse_tool_calls(wrap_bare_calls(text), self.tools, max_calls=max_calls)
            if last and self.settings.constrain and turn.answer is None:
                raise PlanValidationError("the last turn must answer in text")
            return turn

        return generate_checked(self.llm, list(messages), parse, self.settings, log,
                                constraint=constraint, tools=self.schemas,
                                max_tokens=self.max_tokens)

    def native_turn(self, goal: str, log: GenerationLog,
                    tools: Sequence[ToolSpec]) -> NativeReply:
        """With `native`: the first turn as the model writes it alone (`native.native_reply`:
        the goal in its chat template, no grammar, no planner prompt, greedy)."""
        return native_reply(self.llm, goal, tools, self.schemas, max_tokens=self.max_tokens,
                            max_calls=MAX_CALLS_PER_TURN, seed=self.settings.seed, log=log)

    def call_probability(self, messages: Sequence[Message], log: GenerationLog) -> float | None:
        """The model's probability, left free, of calling a tool rather than answering
        (`decline.probe`; None: it cannot tell; the prompt is the first turn's own, so
        its prefix is reused). A grounded turn with nothing observed must call a tool, and
        under that grammar the model would call *something* even for a goal no tool fits."""
        return probe(self.llm, messages, self.tools, self.settings, log, schemas=self.schemas)

    def _turn_tools(self, goal: str, observed: list[Any]) -> list[ToolSpec]:
        """With `mentions`, as in ReAct: a call's keys and numbers come from the goal or
        from a result seen so far. Why: without it the default model's first call was
        often arithmetic on invented numbers (`multiply(1, 1e14)`)."""
        if not self.techniques.mentions:
            return self.tools
        return anchor_to_goal(self.tools, _goal_and_results(goal, observed))

    def run(self, goal: str, executor: Executor, *, max_iterations: int = 5,
            on_event: Callable[[Any], None] | None = None) -> ToolCallingOutcome:
        """The loop: each turn goes through these steps, in this order (a step whose
        switch is off returns the turn unchanged):

        1. `_probe_declines` (decline, before the first turn): the run ends declined when
           the model, left free, would rather answer than call;
        2. `next_turn`: the model's turn under the grammar (calls, or an answer);
        3. `_native` (native, first turn): agreed with the model's free reply;
        4. `_invented` (decline, first turn): the run ends declined when the calls take
           values the goal does not state;
        5. `_defaults` (defaults): optional arguments nobody stated are left out;
        6. `_fresh` (fresh, later turns): only calls that bring something new run, else
           the turn is written again as the last one (an answer);
        then an answer ends the run, or the calls run (`_execute`) and the next turn
        begins. The last turn (max_iterations, or after a turn that repeated the one
        before) must answer."""
        out = ToolCallingOutcome(answer=None, messages=first_turn(
            goal, self.techniques.instruct, self.settings.history))
        loop = _Loop(goal, out, Coverage.of(goal, self.tools, self.techniques.values))
        for i in range(1, max_iterations + 1):
            last = i == max_iterations or loop.repeated
            if self._probe_declines(loop):
                return _declined(out, on_event, "the model answered without calling any "
                                                "offered tool")
            stated = self._answers(loop, last)
            tools = self._turn_tools(goal, loop.observed)
            turn = self.next_turn(out.messages, last=last, log=out.log,
                                  answers=None if stated is None else list(stated),
                                  must_call=loop.coverage.must_call(tools), tools=tools)
            turn = self._native(turn, loop, tools)
            if self._invented(turn, loop):
                return _declined(out, on_event, "the goal states too few of the values "
                                                "its first calls need")
            turn = self._defaults(turn, loop)
            turn = self._fresh(turn, loop, last)
            if turn.answer is not None:
                return _answered(out, turn.answer, stated, on_event,
                                 self._observed(loop, stated))
            self._execute(turn, loop, executor, on_event)
        out.stop_reason = f"no text answer within {max_iterations} iterations"
        return out

    def _probe_declines(self, loop: _Loop) -> bool:
        """With `decline`, before the first turn: whether the model's probability of
        opening a call (`decline.probe`) is below the model's threshold (`Thresholds`).
        The reading is kept for `_invented`."""
        if not self.techniques.decline or loop.out.turns:
            return False
        loop.p_call = self.call_probability(loop.out.messages, loop.out.log)
        return loop.p_call is not None and loop.p_call < Thresholds.of(self.llm).below

    def _answers(self, loop: _Loop, last: bool) -> dict[str, str] | None:
        """With grounded answers, the answer texts the turn may write, each mapped to the
        value it stands for: a part of an object result after its path (`total: 42.5`),
        and, on a turn that is not the last, the bare value too. None: free text."""
        if not self.techniques.grounded:
            return None
        stated = observed_answers(loop.observed, labels=True)
        if stated and not last:  # answering of its own accord: either form
            bare = observed_answers(loop.observed)
            stated = {**stated, **{k: v for k, v in bare.items() if k not in stated}}
        return stated

    def _observed(self, loop: _Loop, stated: dict[str, str] | None) -> Any:
        """With `observe` and grounded answers, when a result is a record: the part of the
        results the model takes as the answer, seeing the goal and the results alone
        (`observe.observe`). In the conversation, under the labelled choice, the 1.5B
        answered a book's author to "how many pages" (2 of 3 goals; with `observe` 3 of
        3); the 0.5B answered the order's customer instead of its total with it (1 case),
        so its catalog default leaves it off. None otherwise."""
        if (not self.techniques.observe or stated is None
                or not any(is_record(v) for v in loop.observed)):
            return None
        value = loop.observed[0] if len(loop.observed) == 1 else list(loop.observed)
        return observe(self.llm, loop.goal, value, self.settings, loop.out.log)

    def _native(self, turn: ToolCallTurn, loop: _Loop,
                tools: Sequence[ToolSpec]) -> ToolCallTurn:
        """With `native`, on the first turn: the turn `agreed` keeps with the model's free
        reply (asked after the constrained turn, whose prompt the probe left in the KV
        cache)."""
        if not (self.techniques.native and not loop.out.turns and turn.calls):
            return turn
        return agreed(turn, self.native_turn(loop.goal, loop.out.log, tools).turn, tools,
                      loop.goal)

    def _invented(self, turn: ToolCallTurn, loop: _Loop) -> bool:
        """With `decline`, on the first turn: whether its calls take too few values the
        goal (or a conversation's earlier turns) states for the model's certainty
        (`decline.calls_invented`)."""
        stated = stated_share(turn.calls, self.settings.framed(loop.goal), self.tools)
        return (loop.p_call is not None and not loop.out.turns and bool(turn.calls)
                and calls_invented(loop.p_call, stated, Thresholds.of(self.llm)))

    def _defaults(self, turn: ToolCallTurn, loop: _Loop) -> ToolCallTurn:
        """With `defaults`: the calls without optional arguments that neither the goal nor
        a result states (`stated.without_unstated_options`)."""
        if not (self.techniques.defaults and turn.calls):
            return turn
        return ToolCallTurn(calls=without_unstated_options(
            turn.calls, _goal_and_results(loop.goal, loop.observed), self.tools))

    def _fresh(self, turn: ToolCallTurn, loop: _Loop, last: bool) -> ToolCallTurn:
        """With `fresh`: on the first turn, its first call and each later one that brings
        something the calls before it did not (`fresh.fresh_first_turn`); on a later turn,
        the calls that bring something new
        (`fresh.fresh_calls`; a value an error message names counts, for a retry); where
        none does, the turn written again as the last one (an answer; grounded: restating
        an observed value)."""
        out = loop.out
        if not (self.techniques.fresh and turn.calls and not last):
            return turn
        if not out.turns:
            kept = fresh_first_turn(turn.calls, loop.goal)
            return turn if len(kept) == len(turn.calls) else ToolCallTurn(calls=kept)
        records = [c for t in out.turns for c in t.calls]
        earlier = [ToolCall(function=c["function"], args=c["args"]) for c in records]
        errors = [c["error"] for c in records if c["error"]]  # a retry may take a value
        kept = fresh_calls(turn.calls, _goal_and_results(loop.goal, [*loop.observed, *errors]),
                           earlier,  # an error names ("expected one of ...")
                           shown=_goal_and_results("", loop.observed))
        if kept:
            return turn if len(kept) == len(turn.calls) else ToolCallTurn(calls=kept)
        answers = (list(observed_answers(loop.observed, labels=True))
                   if self.techniques.grounded else None)
        return self.next_turn(out.messages, last=True, log=out.log, answers=answers)

    def _execute(self, turn: ToolCallTurn, loop: _Loop, executor: Executor,
                 on_event: Callable[[Any], None] | None) -> None:
        """Run the turn's calls in parallel and feed each result back as a `tool` message
        with the id of its call. The same calls with the same results as the turn before
        mean the model is looping (seen: four identical turns of a failing call, 600 s; a
        lookup repeated instead of answered): the next turn must answer."""
        out = loop.out
        ids = [f"call_{loop.next_id + k + 1}" for k in range(len(turn.calls))]
        loop.next_id += len(turn.calls)
        results = executor.run_calls_sync([literal_call(c.function, c.args)
                                           for c in turn.calls], on_event=on_event)
        for c in turn.calls:
            loop.coverage.record(c.args)
        loop.observed += [r.value for r in results if r.ok]
        for result in results:
            out.events.extend(result.events)
        out.messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": c.function, "arguments": c.args}}
            for cid, c in zip(ids, turn.calls)]})
        record = []
        for cid, c, result in zip(ids, turn.calls, results):
            out.messages.append({"role": "tool", "tool_call_id": cid, "name": c.function,
                                 "content": result_content(result)})
            record.append({"id": cid, "function": c.function, "args": c.args,
                           "result": result.value, "error": None if result.ok
                           else result.error.message,  # type: ignore[union-attr]
                           "source": result.source})  # "tool": untrusted data
        out.turns.append(ToolTurn(calls=tuple(record)))
        _emit(out, on_event, "tool_turn", out.turns[-1].to_dict())
        key = json.dumps([[r["function"], r["args"], r["result"], r["error"]]
                          for r in record], sort_keys=True, default=str)
        loop.repeated, loop.previous = key == loop.previous, key


@dataclass
class _Loop:
    """What one run of the loop carries from turn to turn."""

    goal: str
    out: ToolCallingOutcome
    coverage: Coverage
    observed: list[Any] = field(default_factory=list)  # the value of every call that worked
    previous: str | None = None  # the last turn's calls and results, as a key
    repeated: bool = False  # the last turn repeated the one before: the next must answer
    p_call: float | None = None  # with `decline`: the probe's reading before turn 1
    next_id: int = 0


def _answered(out: ToolCallingOutcome, text: str, stated: dict[str, str] | None,
              on_event: Callable[[Any], None] | None,
              observed: Any = None) -> ToolCallingOutcome:
    """`out` ended with the answer `text`; a grounded answer written after its path
    (`total: 42.5`) is the value; `observed` (not None), the answer taken from the
    results instead."""
    out.messages.append({"role": "assistant", "content": text})
    answer = stated.get(text, text) if stated else text
    if observed is not None:
        answer = observed
    out.turns.append(ToolTurn(answer=answer))
    _emit(out, on_event, "tool_turn", out.turns[-1].to_dict())
    out.answer, out.stop_reason = answer, "answered in text"
    return out


def agreed(constrained: ToolCallTurn, native: ToolCallTurn | None,
           tools: Sequence[ToolSpec], goal: str) -> ToolCallTurn:
    """The first turn `native` keeps: where both turns call the same functions (as many
    times each), the constrained turn's calls and arguments with the native turn's values
    (calls of one function paired in order); where they call no function in common and
    the goal states a larger share of the native turn's required values
    (`stated.stated_share`), the native turn (every call of it valid: `native_reply`
    keeps no other); else the constrained turn.

    Why both: under the grammar the model chooses which functions to call, how many times,
    and which optional arguments to pass, better (BFCL parallel: it writes every call of a
    multi-part question, where its free reply writes one; the free reply also adds optional
    arguments the question never asked for), but the grammar forces the call's opening in a
    context the model did not choose, and then it picks other values for the same call
    (BFCL: "3%" written 3, where its free reply writes 0.03). A merged call that is not
    valid for its schema stays the constrained one: nothing invalid runs.

    Why the free reply's functions when the two turns share none and it states more: the
    grammar's opening then led the model to another function than it chose alone, one
    whose values the goal does not give, so the model made them up (BFCL
    `light_travel_time(4)` written freely, `safeway.order(location="Palo Alto, CA")` under
    the grammar). Where the free reply states no more, the choice stays the grammar's
    (seen: a page count asked, `GetPages(title=...)` under the grammar, a free
    `CountBooksBy(author=...)` with an author the goal never names). Where they share
    some function, the constrained turn's set stays (it writes every call of a
    multi-part question, above)."""
    if native is None:
        return constrained
    if native.calls and not ({c.function for c in native.calls}
                             & {c.function for c in constrained.calls}):
        return native if _share(native, goal, tools) > _share(constrained, goal,
                                                               tools) else constrained
    if sorted(c.function for c in native.calls) != sorted(c.function
                                                          for c in constrained.calls):
        return constrained
    spec = {t.qualified_name: t for t in tools}
    free: dict[str, list[ToolCall]] = {}
    for c in native.calls:
        free.setdefault(c.function, []).append(c)
    calls = []
    for c in constrained.calls:
        values = free[c.function].pop(0).args
        merged = {k: values.get(k, v) for k, v in c.args.items()}
        tool = spec.get(c.function)
        ok = tool is not None and not args_errors(tool, merged)
        calls.append(ToolCall(function=c.function, args=merged) if ok else c)
    return ToolCallTurn(calls=tuple(calls))


def _share(turn: ToolCallTurn, goal: str, tools: Sequence[ToolSpec]) -> float:
    """`stated_share` of the turn's calls; 1.0 for calls without a required value."""
    share = stated_share(turn.calls, goal, tools)
    return 1.0 if share is None else share


def _goal_and_results(goal: str, values: Sequence[Any]) -> str:
    """The goal and the results seen so far, as text a value may be read from (`mentions`,
    `defaults`): a string as it is, anything else as JSON (any script kept as written)."""
    seen = "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False,
                                                                default=str)
                      for v in values)
    return f"{goal}\n{seen}"


def _declined(out: ToolCallingOutcome, on_event: Callable[[Any], None] | None,
              why: str) -> ToolCallingOutcome:
    """`out` ended declined, nothing called: no offered tool fits the goal."""
    out.declined = True
    out.stop_reason = f"declined: {why}"
    _emit(out, on_event, "tool_turn", {"calls": [], "answer": None, "declined": True})
    return out


def _emit(out: ToolCallingOutcome, on_event: Callable[[Any], None] | None, kind: str,
          detail: dict[str, Any]) -> None:
    event = PlannerEvent(kind, detail, time.monotonic())
    out.events.append(event)
    if on_event is not None:
        on_event(event)
