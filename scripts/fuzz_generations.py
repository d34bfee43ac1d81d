"""Long-run check of constrained decoding: sampled generations must all parse and validate.

For each model and format (tree, sequential, react step, tool call), N generations under
the project's own grammar (`localagent.grammars` builders, compiled by
`localagent.llm.constrained` inside the backend), sampled (temperature > 0, a new seed
each time) for goals drawn at random from the benchmark suites (benchmarks/suites/*.yaml)
over each goal's own tools. Every output goes through the same checks a planner applies:

- truncated at max_tokens: retried with twice the budget, twice (as the planners'
  `generate_checked` does); counted as `truncated` when the last try is still cut off;
- `parse`: the format's parser refuses the text (`PlanValidationError`);
- `valid.`: it parsed but breaks a schema (`InvalidPlanError`), or, for plans, reading it
  as a plan (`plan_from_dict`) and checking it against the registry (`plan.validate`)
  fails; for calls, the registry's own validator refuses the arguments.

The grammar's promise is 0 parse and 0 validation failures. Not for CI (it loads real
models and runs for hours at the default N); the figures go to docs/BENCHMARKS.md.

    LOCALAGENT_THREADS=2 .venv/bin/python scripts/fuzz_generations.py --n 1000 \
        --log fuzz.jsonl
    .venv/bin/python scripts/fuzz_generations.py --n 10 --models qwen2.5-coder-0.5b-instruct \
        --formats tree,react

`--log FILE` appends one line per generation and, run again with the same options, skips
what the file already holds (its outcomes are counted in): hours of sampling survive an
interrupted run and can be spread over several sessions.

Exit code 0 when every output parsed and validated, 1 otherwise, 2 for bad options.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localagent import grammars as G
from localagent.bench.suite import Task, load_suite
from localagent.bench.tools import build_registry
from localagent.constraint import Constraint
from localagent.errors import (
    InvalidPlanError,
    LocalAgentError,
    ModelNotFoundError,
    PlanValidationError,
    TruncatedOutputError,
    WeightsPackageMissingError,
)
from localagent.grammar.samples import prompt_for
from localagent.llm import load_llm
from localagent.llm.base import LLM
from localagent.plan import literal_call, plan_from_dict, validate
from localagent.tools.registry import ToolRegistry
from localagent.tools.spec import ToolSpec

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("tree", "sequential", "react", "tool_call")
DEFAULT_MODELS = ("qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct", "gemma-3-270m")
MAX_TOKENS = {"sequential": 200, "tree": 200, "react": 120, "tool_call": 160}
STOPS = {"react": ["\nObservation"]}
MAX_STEPS, DEPTH, MAX_CALLS = 6, 4, 4
RETRIES = 2  # after a truncation, as the planners do


@dataclass
class Tally:
    """What one (model, format) pair gave."""

    model: str
    format: str
    generated: int = 0
    truncated: int = 0
    parse_failures: int = 0
    validation_failures: int = 0
    completion_tokens: int = 0
    prompt_tokens: int = 0
    seconds: float = 0.0  # all of it: building and compiling grammars included
    llm_seconds: float = 0.0  # inside llama.cpp: prompt evaluation and decoding
    examples: list[str] = field(default_factory=list)

    COUNTS = ("generated", "truncated", "parse_failures", "validation_failures",
              "completion_tokens", "prompt_tokens", "seconds", "llm_seconds")

    def counts(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.COUNTS}

    def add(self, delta: dict[str, Any], examples: Sequence[str]) -> None:
        """Count in one logged generation (`--log`)."""
        for name in self.COUNTS:
            setattr(self, name, getattr(self, name) + delta.get(name, 0))
        self.examples.extend(examples[: max(0, 5 - len(self.examples))])

    def fail(self, kind: str, goal: str, exc: BaseException, text: str) -> None:
        if kind == "parse":
            self.parse_failures += 1
        elif kind == "validation":
            self.validation_failures += 1
        else:
            self.truncated += 1
        if len(self.examples) < 5:
            message = exc.one_line() if isinstance(exc, LocalAgentError) else repr(exc)
            self.examples.append(f"{kind}: {goal[:60]!r}: {message[:160]} | {text[:120]!r}")


@dataclass(frozen=True)
class Case:
    """One goal with its tools (the task's registry)."""

    goal: str
    registry: ToolRegistry
    tools: tuple[ToolSpec, ...]
    key: str


# --- the formats: constraint, parse and validate ------------------------------------------


def constraint_for(fmt: str, tools: Sequence[ToolSpec]) -> Constraint:
    """The planners' constraint shapes, with default techniques."""
    if fmt == "tree":
        return G.tree_plan(tools, depth=DEPTH)
    if fmt == "sequential":
        return G.sequential_plan(tools, max_steps=MAX_STEPS, refs="backward")
    if fmt == "react":
        return G.react_step(tools)
    return G.tool_call_turn(tools, max_calls=MAX_CALLS)


def check(fmt: str, text: str, case: Case) -> None:
    """Parse `text` as `fmt` and validate it as a planner would before executing;
    raises PlanValidationError (InvalidPlanError: it parsed but does not validate)."""
    tools = list(case.tools)
    if fmt in ("tree", "sequential"):
        parsed = (G.parse_tree(text, tools, depth=DEPTH) if fmt == "tree" else
                  G.parse_sequential(text, tools, max_steps=MAX_STEPS, refs=True))
        _as_validation(lambda: validate(plan_from_dict(parsed.plan), case.registry,
                                        max_depth=DEPTH))
    elif fmt == "react":
        step = G.parse_react(text, tools)
        if step.action is not None:
            action = step.action
            _as_validation(lambda: case.registry.validate_args(
                action.function, dict(literal_call(action.function, action.args).args)))
    else:
        for call in G.parse_tool_calls(text, tools, max_calls=MAX_CALLS).calls:
            _as_validation(case.registry.validate_args, call.function, call.args)


def _as_validation(check_it: Callable[..., Any], *args: Any) -> None:
    """Run a check after parsing: any refusal counts as a validation failure."""
    try:
        check_it(*args)
    except LocalAgentError as exc:
        raise InvalidPlanError(f"parsed, but does not validate: {exc.one_line()}") from None


# --- generating -------------------------------------------------------------------------


def generate_one(llm: LLM, fmt: str, case: Case, seed: int, temperature: float,
                 tally: Tally) -> None:
    """One sampled generation (with the planners' retries after a truncation), tallied."""
    instructions = G.format_instructions(fmt, case.tools)
    prompt = prompt_for(llm, instructions, case.goal)
    constraint = constraint_for(fmt, case.tools)
    budget, text = MAX_TOKENS[fmt], ""
    start = time.perf_counter()
    tally.generated += 1
    try:
        for attempt in range(RETRIES + 1):
            completion = llm.complete(prompt, max_tokens=budget, stop=STOPS.get(fmt, ()),
                                      temperature=temperature, seed=seed + attempt,
                                      constraint=constraint)
            tally.completion_tokens += completion.usage.completion_tokens
            tally.prompt_tokens += completion.usage.prompt_tokens_evaluated
            tally.llm_seconds += completion.usage.seconds
            text = completion.text
            try:
                G.ensure_complete(completion)
            except TruncatedOutputError as exc:
                if attempt == RETRIES:
                    tally.fail("truncated", case.goal, exc, text)
                    return
                budget *= 2
                continue
            break
        try:
            check(fmt, text, case)
        except InvalidPlanError as exc:
            tally.fail("validation", case.goal, exc, text)
        except PlanValidationError as exc:
            tally.fail("parse", case.goal, exc, text)
    finally:
        tally.seconds += time.perf_counter() - start


def load_cases(suites: Sequence[Path], max_tools: int) -> list[Case]:
    """Every task of the suites as a case (tasks with more than `max_tools` tools skipped:
    their prompts are long and the figures would mostly time prompt evaluation)."""
    cases: list[Case] = []
    registries: dict[tuple[Any, ...], ToolRegistry] = {}
    for path in suites:
        for task in load_suite(path).tasks:
            registry = registries.get(_task_key(task))
            if registry is None:
                registry = registries[_task_key(task)] = build_registry(task)
            tools = tuple(registry.specs())
            if len(tools) <= max_tools:
                cases.append(Case(task.goal, registry, tools, G.tools_hash(tools)))
    return cases


def _task_key(task: Task) -> tuple[Any, ...]:
    return (str(task.base_dir), task.plugins, task.exclude, task.distractors,
            task.id if task.distractors else "")


def draw(cases: Sequence[Case], n: int, rng: random.Random) -> list[Case]:
    """`n` cases at random, grouped by tool set so consecutive prompts share a prefix."""
    chosen = [rng.choice(cases) for _ in range(n)]
    order = {key: i for i, key in enumerate(dict.fromkeys(c.key for c in chosen))}
    return sorted(chosen, key=lambda c: order[c.key])


def _run_key(model: str, fmt: str, args: argparse.Namespace) -> str:
    """What decides the i-th generation: a logged one counts only under the same key."""
    fast = os.environ.get("LOCALAGENT_FAST_FORWARD", "")
    return (f"{model}|{fmt}|n={args.n}|seed={args.seed}|t={args.temperature}|"
            f"suites={args.suites}|max_tools={args.max_tools}|fast_forward={fast}")


def read_log(path: Path | None) -> dict[str, dict[int, dict[str, Any]]]:
    """The generations a `--log` file holds, by run key and index; a torn last line (an
    interrupted write) is ignored and done again."""
    logged: dict[str, dict[int, dict[str, Any]]] = {}
    if path is None or not path.exists():
        return logged
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
            logged.setdefault(str(item["run"]), {})[int(item["i"])] = {
                "counts": dict(item["counts"]), "examples": list(item["examples"])}
        except (ValueError, KeyError, TypeError):
            continue
    return logged


def _append(path: Path, item: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(item) + "\n")


def run_model(model: str, formats: Sequence[str], cases: Sequence[Case], args: argparse.Namespace,
              tallies: list[Tally]) -> None:
    logged = read_log(args.log)
    try:
        llm = load_llm(model, seed=args.seed)
    except (WeightsPackageMissingError, ModelNotFoundError) as exc:
        print(f"skip {model}: not installed ({exc.one_line()})", flush=True)
        return
    # Thousands of distinct prompts would churn the disk prompt cache (a checkpoint of a
    # dozen MB per prompt, evicted again at the cap) and fill the user's home; validity
    # does not depend on it.
    set_cache = getattr(llm, "set_prompt_cache", None)
    if set_cache is not None:
        set_cache(None)
    try:
        for fmt in formats:
            tally = Tally(model, fmt)
            tallies.append(tally)
            rng = random.Random(f"{args.seed}:{model}:{fmt}")
            chosen = draw(cases, args.n, rng)
            run = _run_key(model, fmt, args)
            done = logged.get(run, {})
            for i, case in enumerate(chosen, 1):
                if i in done:
                    tally.add(done[i]["counts"], done[i]["examples"])
                    continue
                seed = args.seed + 1000 * i
                before, seen = tally.counts(), len(tally.examples)
                generate_one(llm, fmt, case, seed, args.temperature, tally)
                if args.log is not None:
                    after = tally.counts()
                    _append(args.log, {"run": run, "i": i, "examples": tally.examples[seen:],
                                       "counts": {k: after[k] - before[k] for k in after}})
                _progress(tally, i, len(chosen))
            print(file=sys.stderr, flush=True)
    finally:
        close = getattr(llm, "close", None)
        if close is not None:
            close()


def _progress(tally: Tally, done: int, total: int) -> None:
    bad = tally.parse_failures + tally.validation_failures
    print(f"\r{tally.model} {tally.format}: {done}/{total} "
          f"({bad} failed, {tally.truncated} truncated, {tally.seconds:.0f} s)",
          end="", file=sys.stderr, flush=True)


def table(tallies: Sequence[Tally]) -> str:
    """The summary as a Markdown table (pasteable into docs/BENCHMARKS.md)."""
    head = ("| model | format | generated | parse failures | validation failures | truncated "
            "| seconds | of which llama.cpp | prompt tokens evaluated | completion tokens |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = [f"| {t.model} | {t.format} | {t.generated} | {t.parse_failures} | "
            f"{t.validation_failures} | {t.truncated} | {t.seconds:.1f} | {t.llm_seconds:.1f} | "
            f"{t.prompt_tokens} | {t.completion_tokens} |" for t in tallies]
    return "\n".join([head, *rows])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000,
                        help="generations per model and format (default 1000)")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated catalog names or .gguf paths (default: the "
                             "three catalog models; one that is not installed is skipped)")
    parser.add_argument("--formats", default=",".join(FORMATS),
                        help=f"comma-separated formats out of {', '.join(FORMATS)} (default all)")
    parser.add_argument("--suites", default="benchmarks/suites/*.yaml",
                        help="glob of suite files the goals come from, relative to the repo "
                             "(default benchmarks/suites/*.yaml)")
    parser.add_argument("--temperature", type=float, default=0.8,
                        help="sampling temperature, above 0 (default 0.8)")
    parser.add_argument("--seed", type=int, default=0,
                        help="base seed of goal choice and sampling (default 0)")
    parser.add_argument("--max-tools", type=int, default=30,
                        help="skip goals offering more tools than this (default 30)")
    parser.add_argument("--log", type=Path, default=None,
                        help="append each generation to this JSONL file and skip those it "
                             "already holds for the same options (resume)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the tallies (with failure examples) to this file")
    args = parser.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = [f for f in args.formats if f not in FORMATS]
    if unknown or not args.formats:
        parser.error(f"unknown format(s) {', '.join(unknown) or '(none)'}; "
                     f"choose from {', '.join(FORMATS)}")
    if args.n < 1 or args.temperature <= 0 or not args.models:
        parser.error("--n must be at least 1, --temperature above 0, --models not empty")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    suites = sorted(REPO.glob(args.suites))
    if not suites:
        print(f"error: no suite matches {args.suites}", file=sys.stderr)
        return 2
    cases = load_cases(suites, args.max_tools)
    if not cases:
        print(f"error: no goal with at most {args.max_tools} tools", file=sys.stderr)
        return 2
    print(f"{len(cases)} goals from {len(suites)} suites; {args.n} generations per model and "
          f"format; temperature {args.temperature}", flush=True)
    tallies: list[Tally] = []
    for model in args.models:
        run_model(model, args.formats, cases, args, tallies)
    print(table(tallies))
    for tally in tallies:
        for line in tally.examples:
            print(f"  {tally.model} {tally.format} {line}")
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(t) for t in tallies], indent=2) + "\n",
                             encoding="utf-8")
    bad = sum(t.parse_failures + t.validation_failures for t in tallies)
    return 1 if bad or not tallies else 0


if __name__ == "__main__":
    sys.exit(main())
