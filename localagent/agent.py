"""The public entry point: wires model, tools, filter, planner and executor.

    Agent(plugins=[MyPlugin()]).run("...", planner="tree") -> AgentResult

Data flows one way: goal -> (filter tools) -> planner (prompt + grammar -> checked plan or
next step) -> executor -> answer + trace. The registry's prompt functions use the same
(metered) model instance, so `AgentResult.usage` covers planning and prompt functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from typing_extensions import Self

from localagent.conversation import Conversation
from localagent.errors import DeclinedError, LocalAgentError, PlanningError, UsageError
from localagent.executor import ExecutionPolicy, Executor
from localagent.llm.base import LLM, Usage
from localagent.plan import SequentialPlan, TreePlan, plan_to_dict
from localagent.planners.base import (
    NO_PLAN_MESSAGE,
    GenerationLog,
    MeteredLLM,
    PlannerSettings,
    select_specs,
    usage_since,
)
from localagent.planners.layout import OfferOrder
from localagent.planners.names import PLANNERS, PlannerName  # noqa: F401 (re-exported)
from localagent.planners.techniques import TechniqueChanges, Techniques, parse_spec
from localagent.side_effects import Approve, SideEffectLedger

if TYPE_CHECKING:
    from localagent.retrieval import FilterOptions, ToolIndex
    from localagent.retrieval.translation import QueryTranslator
    from localagent.tools.registry import ToolRegistry
    from localagent.tools.spec import ToolSpec

OnEvent = Callable[[Any], None]


@dataclass(frozen=True)
class AgentResult:
    """What one run produced. `error` is set (and `answer` None) when no answer was reached."""

    answer: Any
    planner: str
    model: str
    plan: dict[str, Any] | None
    steps: list[dict[str, Any]]
    usage: Usage
    seconds: float
    error: str | None = None
    tools: list[str] = field(default_factory=list)
    parse_failures: int = 0  # outputs rejected as unparsable or truncated, then retried
    validation_failures: int = 0  # outputs that parsed but failed the schemas, then retried
    stop_reason: str = ""
    outputs: list[str] = field(default_factory=list)  # the model's raw planning texts
    attempts: list[dict[str, Any]] = field(default_factory=list)  # plans run (replan, vote)
    techniques: str = ""
    # the typed answer's JSON form (a declared `output_type`): `to_dict` prints it
    dump: Callable[[Any], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def answer_json(self) -> Any:
        """The answer as JSON data: a typed answer (a model instance, a date) dumped."""
        return self.dump(self.answer) if self.dump is not None and self.ok else self.answer

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer_json(), "planner": self.planner, "model": self.model,
                "plan": self.plan, "steps": self.steps, "usage": self.usage.to_dict(),
                "seconds": round(self.seconds, 3), "error": self.error, "tools": self.tools,
                "parse_failures": self.parse_failures,
                "validation_failures": self.validation_failures, "stop_reason": self.stop_reason,
                "outputs": self.outputs, "attempts": self.attempts,
                "techniques": self.techniques}


class Agent:
    """A model, a registry of tools and the planners over them.

    `model`: an LLM, a catalog name or .gguf path, or None for the default model (loaded
    lazily, on the first run). `plugins`: extra plugins (objects, classes, modules, paths),
    added to the built-ins and, only with `examples=True`, the example plugins. `techniques`:
    the planning techniques (a `Techniques`, `TechniqueChanges` or a spec such as
    "reasoning+replan=2" or "+replan=2,-mentions"), default (None or "default") each
    planner's measured default configuration; changes apply to each planner's default.
    `approve`: asked once per distinct side-effect call of a run (`ToolCallRequest`: the
    function and its arguments) before it runs; None refuses every such call (a refusal
    is a tool error of kind "refused", the run goes on as the planner can). `dry_run`:
    side-effect calls never run and get a placeholder value; read-only calls run.
    Each `run` has its own `SideEffectLedger`: a side-effect call runs at most once per
    distinct call (function + arguments) in it, across votes, re-plans and loop steps.
    `mcp`: commands of MCP servers ("python server.py", split like a shell would) started
    now, each a plugin named after the server (`localagent/tools/mcp.py`), within
    `mcp_timeout` seconds each; they run until `close()` (or the end of a `with` block).
    """

    def __init__(
        self,
        model: str | LLM | None = None,
        plugins: Sequence[Any] = (),
        *,
        filter: FilterOptions | None = None,
        constrain: bool = True,
        examples: bool = False,
        registry: ToolRegistry | None = None,
        policy: ExecutionPolicy | None = None,
        settings: PlannerSettings | None = None,
        index: ToolIndex | None = None,
        techniques: Techniques | TechniqueChanges | str | None = None,
        approve: Approve | None = None,
        dry_run: bool = False,
        mcp: Sequence[str | Sequence[str]] = (),
        mcp_timeout: float | None = None,
    ) -> None:
        from localagent.tools.registry import default_registry

        self._model_source = model
        self._llm: MeteredLLM | None = None
        self._translator: QueryTranslator | None = None
        self._offer_order = OfferOrder()
        self.filter, self.index = filter, index
        base = settings or PlannerSettings()
        if techniques is not None:
            if isinstance(techniques, str):
                techniques = parse_spec(techniques)
            base = replace(base, techniques=techniques)
        self.settings = base if constrain else replace(base, constrain=False)
        self.policy = policy or ExecutionPolicy()
        self.approve, self.dry_run = approve, dry_run
        self.registry = registry or default_registry(
            plugins, llm=lambda: self.llm, examples=examples)
        if registry is not None:
            registry.llm = lambda: self.llm
        self._mcp: Any = None
        if mcp:  # all servers' tools, or none of them (McpServerError, exit code 2)
            from localagent.tools.mcp import connect_servers

            self._mcp = connect_servers(mcp, self.registry, start_timeout=mcp_timeout)

    def close(self) -> None:
        """Stop the MCP servers this agent started (idempotent; the model stays loaded)."""
        if self._mcp is not None:
            self._mcp.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def llm(self) -> MeteredLLM:
        """The (metered) model, loaded on first use."""
        if self._llm is None:
            source = self._model_source
            if isinstance(source, LLM):
                inner = source
            else:
                from localagent.llm import load_llm

                inner = load_llm(source)
            self._llm = inner if isinstance(inner, MeteredLLM) else MeteredLLM(inner)
        return self._llm

    def tools_for(self, goal: str) -> list[ToolSpec]:
        """The functions the planner will see for `goal` (after the filter; the filter also
        searches with the model's English translation of the goal unless
        `filter.translate` is off, `retrieval/translation.py`), in the order this agent
        first offered them (`OfferOrder`: consecutive goals share their prompt prefix)."""
        return self._offer_order(
            select_specs(goal, self.registry, self.filter, self._tool_index, self._translate))

    def _tool_index(self) -> ToolIndex:
        """The index given, or one opened in the default location on the first goal the
        filter ranks and kept, so later goals reuse its embedding model (loading it again
        costs about 0.15 s a goal)."""
        if self.index is None:
            from localagent.retrieval import ToolIndex

            self.index = ToolIndex()
        return self.index

    def translation_of(self, goal: str) -> str:
        """The English translation the filter searched with for `goal`, "" when none was
        made (no filtering, `translate_goals` off, not yet asked) or it is the goal."""
        return self._translator.known(goal) if self._translator is not None else ""

    def _translate(self, goal: str) -> str:
        if self._translator is None:
            from localagent.retrieval.translation import QueryTranslator

            self._translator = QueryTranslator(self.llm)
        return self._translator(goal)

    def plan(self, goal: str, planner: str = "tree") -> TreePlan | SequentialPlan:
        """A checked plan for `goal` (tree or sequential), not executed."""
        _check(goal, planner, plan_only=True)
        self.settings.for_planner(planner)  # bad technique changes: UsageError, no model load
        return self._make_plan(goal, planner, self.tools_for(goal), GenerationLog())

    def _planner(self, planner: str, specs: list[ToolSpec],
                 settings: PlannerSettings | None = None) -> Any:
        """The plan planner, shown the filter's English translation of the goal if one
        was made (`PlannerSettings.english`)."""
        settings = settings or self.settings
        if self._translator is not None:
            settings = replace(settings, english=self.translation_of)
        if planner == "tree":
            from localagent.planners.tree import TreePlanner

            return TreePlanner(self.llm, specs, settings)
        from localagent.planners.sequential import SequentialPlanner

        return SequentialPlanner(self.llm, specs, settings)

    def _make_plan(self, goal: str, planner: str, specs: list[ToolSpec],
                   log: GenerationLog) -> TreePlan | SequentialPlan:
        return self._planner(planner, specs).plan(goal, log).plan

    def run(self, goal: str, planner: str = "tree", *, max_iterations: int = 5,
            on_event: OnEvent | None = None,
            conversation: Conversation | None = None,
            output_type: Any = None) -> AgentResult:
        """Plan and execute. Bad input raises (UsageError); a run that reaches no answer
        returns an AgentResult with `error` set. With `conversation`, every planner's prompt
        shows its earlier turns before the goal (`PlannerSettings.context`; the techniques
        still read the goal alone), the tool filter reads them too, and this turn is added
        to it. With `output_type` (a Pydantic model, dataclass, TypedDict, `Literal`, `int`,
        `float`, `bool`, `str`, `datetime.date`, a JSON schema dict, an Outlines type;
        `answer_type.py`), the answer is written under that type's grammar from the run's
        results and `answer` is the typed value; a type that cannot become a grammar raises
        AnswerTypeError before any model work."""
        _check(goal, planner, plan_only=False)
        kind = None
        if output_type is not None:
            from localagent.answer_type import answer_type

            kind = answer_type(output_type)
        result = self._run(goal, planner, max_iterations, on_event, conversation,
                           typed=kind is not None)
        if kind is not None and result.ok:
            result = self._typed(goal, result, kind, on_event)
        if conversation is not None:
            conversation.add(goal, result)
        return result

    def _typed(self, goal: str, result: AgentResult, kind: Any,
               on_event: OnEvent | None) -> AgentResult:
        """`result` with its answer written as `kind` (planners/typed_answer.py)."""
        from localagent.planners.base import PlannerEvent
        from localagent.planners.typed_answer import typed_answer

        start, before, log = time.perf_counter(), self.llm.usage, GenerationLog()
        try:
            value = typed_answer(self.llm, goal, result.answer, result.steps, kind,
                                 self.settings, log)
        except LocalAgentError as exc:  # no typed answer (a PlanningError, a ConstraintError)
            if exc.exit_code == 2:
                raise
            value, error = None, exc.one_line()
        else:
            error = None
        spent, seconds = usage_since(self.llm, before), time.perf_counter() - start
        if on_event is not None and error is None:
            on_event(PlannerEvent("answer_typed", {
                "answer": kind.dump(value), "type": kind.name, "generated": spent.calls > 0,
                "tokens": spent.completion_tokens, "seconds": round(seconds, 3)},
                time.monotonic()))
        return replace(result, answer=value, error=error, dump=kind.dump,
                       usage=result.usage + spent, seconds=result.seconds + seconds,
                       outputs=[*result.outputs, *log.raw],
                       parse_failures=(result.parse_failures + log.parse_failures
                                       + log.truncations),
                       stop_reason=result.stop_reason if error is None else "no typed answer")

    def _run(self, goal: str, planner: str, max_iterations: int,
             on_event: OnEvent | None, conversation: Conversation | None,
             typed: bool = False) -> AgentResult:
        if max_iterations < 1:
            raise UsageError(f"max_iterations must be at least 1, got {max_iterations}")
        self.settings.for_planner(planner)  # bad technique changes: UsageError, no model load
        start, before = time.perf_counter(), self.llm.usage
        settings = self.settings if conversation is None else replace(
            self.settings, context=conversation.context(),
            history=tuple(conversation.messages()))
        specs = self.tools_for(settings.framed(goal))
        log = GenerationLog()
        ctx = _RunContext(self, goal, planner, specs, log, start, before,
                          SideEffectLedger(self.approve, dry_run=self.dry_run), settings,
                          typed)
        try:
            if planner in ("tree", "sequential"):
                return self._run_plan(ctx, on_event)
            return self._run_loop(ctx, max_iterations, on_event)
        except PlanningError as exc:
            declined = exc.one_line() if isinstance(exc, DeclinedError) else ""
            return ctx.result(None, None, [], error=exc.one_line(), stop_reason=declined)
        except LocalAgentError as exc:
            if exc.exit_code == 2:
                raise
            return ctx.result(None, None, [], error=exc.one_line())

    def _run_plan(self, ctx: _RunContext, on_event: OnEvent | None) -> AgentResult:
        from localagent.planners.base import PlannerEvent
        from localagent.planners.observe import is_record, observe
        from localagent.planners.plan_runner import plan_and_execute

        run = plan_and_execute(self._planner(ctx.planner, ctx.specs, ctx.settings), ctx.goal,
                               lambda: Executor(self.registry, self.policy, effects=ctx.effects),
                               ctx.log,
                               on_event)
        chosen = run.chosen or (run.attempts[-1] if run.attempts else None)
        if chosen is None:
            error = run.error or "no plan"
            raise (DeclinedError if error == NO_PLAN_MESSAGE else PlanningError)(error)
        result = chosen.result
        steps = [e.to_dict() for e in result.events] if result is not None else []
        reason = f"{len(run.attempts)} plan(s) executed" if len(run.attempts) > 1 else ""
        if run.votes:
            reason += f"; votes {run.votes}"
        value = result.value if run.error is None and result else None
        if is_record(value) and not ctx.typed:  # the model takes the part that answers
            value = observe(self.llm, ctx.goal, value, ctx.settings, ctx.log)
            if on_event is not None:
                on_event(PlannerEvent("answer_observed", {"answer": value}, time.monotonic()))
        return ctx.result(value, plan_to_dict(chosen.plan), steps, error=run.error,
                          stop_reason=reason, attempts=[a.to_dict() for a in run.attempts])

    def _run_loop(self, ctx: _RunContext, max_iterations: int,
                  on_event: OnEvent | None) -> AgentResult:
        executor = Executor(self.registry, self.policy, effects=ctx.effects)
        if ctx.planner == "react":
            from localagent.planners.react import ReactPlanner

            out: Any = ReactPlanner(self.llm, ctx.specs, ctx.settings).run(
                ctx.goal, executor, max_iterations=max_iterations, on_event=on_event)
        else:
            from localagent.planners.tool_calling import ToolCallingPlanner

            out = ToolCallingPlanner(self.llm, ctx.specs, ctx.settings).run(
                ctx.goal, executor, max_iterations=max_iterations, on_event=on_event)
        ctx.log = out.log
        steps = [t.to_dict() for t in out.turns]
        error = None if out.answer is not None else out.stop_reason
        return ctx.result(out.answer, None, steps, error=error, stop_reason=out.stop_reason)


@dataclass
class _RunContext:
    agent: Agent
    goal: str
    planner: str
    specs: list[ToolSpec]
    log: GenerationLog
    start: float
    before: Usage
    effects: SideEffectLedger  # the run's side-effect calls, shared by its executors
    settings: PlannerSettings  # the agent's, with the run's conversation context
    typed: bool = False  # a typed answer follows: it reads the whole results itself

    def result(self, answer: Any, plan: dict[str, Any] | None, steps: list[dict[str, Any]],
               *, error: str | None, stop_reason: str = "",
               attempts: list[dict[str, Any]] | None = None) -> AgentResult:
        llm = self.agent.llm
        return AgentResult(
            answer=answer, planner=self.planner, model=llm.info.name, plan=plan, steps=steps,
            usage=usage_since(llm, self.before), seconds=time.perf_counter() - self.start,
            error=error, tools=[s.qualified_name for s in self.specs],
            parse_failures=self.log.parse_failures + self.log.truncations,
            validation_failures=self.log.validation_failures,
            stop_reason=stop_reason or ("" if error else "done"), outputs=list(self.log.raw),
            attempts=attempts or [],
            techniques=self.agent.settings.for_planner(self.planner,
                                                      llm.info.name)[1].label)


def _check(goal: str, planner: str, *, plan_only: bool) -> None:
    if not isinstance(goal, str) or not goal.strip():
        raise UsageError("the goal is empty")
    allowed = ("tree", "sequential") if plan_only else PLANNERS
    if planner not in allowed:
        raise UsageError(f"unknown planner {planner!r}; choose one of {', '.join(allowed)}")
