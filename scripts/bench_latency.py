"""Latency of a goal, side by side: cold process, second process with the disk prompt
cache, warm in-process; plus the model's raw llama.cpp speed (issue 22).

Usage: python scripts/bench_latency.py [--threads N] [--modes cold,disk,other,warm,raw]
                                       [--goals N] [--out results.jsonl]
       python scripts/bench_latency.py --modes drafts [--models a,b]
       python scripts/bench_latency.py --modes streaming [--models a,b] [--delay S]

Goals: the README's invoice goal (`--examples`, tree planner) and five goals of
benchmarks/suites/generalisation.yaml (one per category, over the suite's plugins), each
run as a user runs it: `localagent run GOAL --json` with the default filter.

- cold: a new process with an empty `LOCALAGENT_HOME` (the prompt cache starts empty and
  is filled by this run);
- disk: a second new process, same goal, same home (the disk cache holds its prompt);
- other: a new process per goal in one shared home, goals in order, so each finds only
  the prefixes the *other* goals over the same tools left (the first goal of each tool set
  finds nothing);
- warm: one process, one model, one Agent per tool set, the disk cache off: a different
  goal over the same tools first, then each goal (in-memory KV reuse only);
- raw: the same model on the invoice goal's real prompt: prompt tokens/s (nothing
  reused), generation tokens/s without any logits processor, and under the tree grammar
  both token by token and with fast-forward (forced tokens evaluated in one batch); the
  ratios are constrained / unconstrained tokens per second.

- drafts (issue 45): for each catalog model (`--models`, default both), one process, the
  README tour's goal of each planner (tree: the invoice goal; tools: the run command's
  goal), each run warm after the warm-up goal with the same planner, without and with
  drafts from the prompt (`llm/speculative.py`): seconds, tokens, draft tokens accepted;
  then tokens/s under the tree grammar token by token, with fast-forward, and with drafts.
- streaming (issue 45): for each catalog model, tools that each take `--delay` seconds and
  a goal whose plan is two independent chains of two calls joined by a sum
  (`localagent/bench/streaming.py`), tree and sequential planners, warm, three runs each
  without and with streamed execution (`early_calls.py`): median seconds end to end.

The tool index lives in one folder for every run (built once before the runs), so a cold
run's seconds are not an index build. Seconds on a shared machine move with its load:
compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "benchmarks" / "suites" / "generalisation.yaml"
INVOICE = "What is the total of the invoices of A and C?"
INVOICE_ANSWER = 22000  # A 2000 + C 20000 (localagent/tools/examples/demo.py)
INVOICE_WARMUP = "What is the invoice of B minus the invoice of D?"
WARMUP_ANSWER = -5200  # B 1500 - D 6700
SUITE_IDS = ("lookup-pages-salt-road", "arithmetic-population-norway-chile",
             "chain-department-of-atlas-driver", "conditional-more-points-wolves-otters",
             "list-books-by-okafor")
SUITE_WARMUP = "lookup-capital-kenya"
MODES = ("cold", "disk", "other", "warm", "raw", "drafts", "streaming")
MODELS = ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")
TOUR = (("tree", INVOICE), ("sequential", "Get the invoice amount of company D."),
        ("react", "What is the invoice amount of company B plus 15?"),
        ("tools", "What is 100 EUR in USD?"))  # README's tour; tools: its run command


@dataclass(frozen=True)
class Goal:
    """One goal and how `localagent run` offers its tools."""

    key: str
    text: str
    args: tuple[str, ...]  # --examples, or --plugins/--exclude of the suite task
    group: str  # goals of one group share their tools


def goals(limit: int) -> tuple[list[Goal], dict[str, Goal], Any]:
    """The goals in order, a warm-up goal per group, and the suite (for judging)."""
    from localagent.bench.suite import load_suite

    suite = load_suite(SUITE)
    tasks = {t.id: t for t in suite.tasks}

    def suite_goal(task_id: str) -> Goal:
        task = tasks[task_id]
        args: list[str] = []
        for plugin in task.plugins:  # a built-in (MathPlugin) is always there
            if (task.base_dir / plugin).exists():
                args += ["--plugins", str(task.base_dir / plugin)]
        for name in task.exclude:
            args += ["--exclude", name]
        return Goal(task_id, task.goal, tuple(args), "suite")

    found = [Goal("invoice", INVOICE, ("--examples",), "examples")]
    found += [suite_goal(i) for i in SUITE_IDS]
    warmups = {"examples": Goal("invoice-warmup", INVOICE_WARMUP, ("--examples",), "examples"),
               "suite": suite_goal(SUITE_WARMUP)}
    return found[:limit], warmups, suite


def correct(goal: Goal, run: dict[str, Any], suite: Any) -> bool:
    """The answer judged as the suite judges it (examples goals: the number expected)."""
    if goal.group == "examples":
        expected = INVOICE_ANSWER if goal.text == INVOICE else WARMUP_ANSWER
        try:
            return float(str(run.get("answer"))) == expected
        except ValueError:
            return False
    from localagent.bench.compare import judge

    task = next(t for t in suite.tasks if t.id == goal.key)
    return judge(task, run.get("answer"), run) is None


# Run in the child: the CLI, with the wall-clock time of its first model call written to
# stderr (seconds since the parent started the process), for start-up benchmarks.
CHILD = """
import sys, time
T0 = float(sys.argv.pop())
from localagent.llm import llama
def first(name):
    original = getattr(llama.LlamaCppLLM, name)
    def timed(self, *a, **k):
        if not getattr(llama, "_bench_first", False):
            llama._bench_first = True
            print(f"FIRST_MODEL_CALL {time.time() - T0:.3f}", file=sys.stderr)
        return original(self, *a, **k)
    setattr(llama.LlamaCppLLM, name, timed)
for name in ("complete", "next_tokens"):
    first(name)
from localagent.cli import app
app(prog_name="localagent")
"""


def run_process(goal: Goal, home: Path, index: Path, threads: int) -> dict[str, Any]:
    """`localagent run GOAL --json` in a new process; its JSON plus the wall seconds and
    `first_call`, the seconds from the process's start to its first model call."""
    env = {**os.environ, "LOCALAGENT_HOME": str(home), "LOCALAGENT_INDEX_DIR": str(index),
           "LOCALAGENT_PROMPT_CACHE": "1"}
    cmd = [sys.executable, "-c", CHILD, "run", goal.text, "--json", "--threads", str(threads),
           *goal.args]
    start = time.perf_counter()
    done = subprocess.run([*cmd, str(time.time())], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=1800, check=False)
    wall = time.perf_counter() - start
    first = [float(line.split()[1]) for line in done.stderr.splitlines()
             if line.startswith("FIRST_MODEL_CALL ")]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": done.stderr.strip()[-300:] or "no output", "wall": wall}
    return {**json.loads(lines[-1]), "wall": wall, "first_call": first[0] if first else None}


def row(mode: str, goal: Goal, run: dict[str, Any], suite: Any) -> dict[str, Any]:
    u = run.get("usage") or {}
    return {"mode": mode, "goal": goal.key, "prompt_tokens": u.get("prompt_tokens", 0),
            "evaluated": u.get("prompt_tokens_evaluated", 0),
            "reused": u.get("prompt_tokens_reused", 0),
            "loaded": u.get("prompt_tokens_loaded", 0),
            "generated": u.get("completion_tokens", 0), "llm_s": u.get("seconds", 0.0),
            "agent_s": run.get("seconds", 0.0), "wall_s": run.get("wall"),
            "ok": correct(goal, run, suite) if "usage" in run else False,
            "answer": run.get("answer"),
            "error": run.get("error")}


def make_agent(goal: Goal, model: Any) -> Any:
    """The Agent `localagent run` builds for this goal's flags (default filter, settings),
    over `model` (an LLM, or None: loaded on first use)."""
    from localagent.agent import Agent
    from localagent.cli.run import _filter, _settings

    argv = list(goal.args)
    plugins = [argv[i + 1] for i, a in enumerate(argv) if a == "--plugins"]
    exclude = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude"]
    cfg = _settings(examples="--examples" in argv)
    return Agent(model, plugins, filter=_filter(None, None, None, exclude, None),
                 constrain=cfg.value("constrain"), techniques=cfg.value("techniques"),
                 examples=cfg.value("examples"))


def build_index(all_goals: list[Goal], index: Path) -> None:
    """Fill the shared tool index once, so that no timed run embeds the tools."""
    os.environ["LOCALAGENT_INDEX_DIR"] = str(index)
    for goal in all_goals:
        make_agent(goal, None).tools_for(goal.text)


def warm_rows(rows: list[dict[str, Any]], all_goals: list[Goal], warmups: dict[str, Goal],
              threads: int, suite: Any, keep: bool) -> tuple[Any, Any]:
    """Every goal in one process: one model, one Agent per group, disk cache off; the
    rows are appended to `rows` when `keep`. Returns the model and the examples agent."""
    from localagent.llm import load_llm

    llm = load_llm(None, n_threads=threads)
    llm.set_prompt_cache(None)  # type: ignore[attr-defined]
    agents: dict[str, Any] = {}
    for goal in all_goals:
        if goal.group not in agents:
            agent = agents[goal.group] = make_agent(goal, llm)
            first = warmups[goal.group]
            if keep:
                rows.append(row("warm-first", first, _agent_run(agent, first.text), suite))
        if keep:
            rows.append(row("warm", goal, _agent_run(agents[goal.group], goal.text), suite))
    if keep and all_goals and all_goals[0].key == "invoice":
        again = _agent_run(agents["examples"], INVOICE)
        rows.append(row("warm-same", all_goals[0], again, suite))
    return llm, agents.get("examples")


def _agent_run(agent: Any, text: str) -> dict[str, Any]:
    start = time.perf_counter()
    result = agent.run(text, planner="tree")
    return {**result.to_dict(), "wall": time.perf_counter() - start}


def raw_speed(llm: Any, agent: Any) -> dict[str, Any]:
    """Prompt and generation tokens/s on the invoice goal's own prompt; the grammar's
    per-token cost as constrained / unconstrained tokens per second."""
    from localagent.planners.tree import TreePlanner

    specs = agent.tools_for(INVOICE)
    planner = TreePlanner(agent.llm, specs, agent.settings)
    tools = planner.tools_for(INVOICE)
    prompt = llm.format_chat(planner.messages(INVOICE, tools))
    constraint = planner.constraint(tools, INVOICE)
    llm.reset_cache()
    first = llm.complete(prompt, max_tokens=1)
    prompt_tps = first.usage.prompt_tokens_evaluated / first.usage.seconds

    def speed(**kwargs: Any) -> tuple[float, int]:
        """Median tokens/s of three generations (the prompt cached: 1 token evaluated)."""
        runs = [llm.complete(prompt, max_tokens=160, **kwargs).usage for _ in range(3)]
        rates = sorted(u.completion_tokens / u.seconds for u in runs)
        return rates[1], runs[0].completion_tokens

    free, free_n = speed()
    llm.complete(prompt, max_tokens=160, constraint=constraint)  # compile, warm the grammar
    chosen = llm.fast_forward
    try:
        llm.fast_forward = False
        stepwise, stepwise_n = speed(constraint=constraint)
        llm.fast_forward = True
        bound, bound_n = speed(constraint=constraint)
    finally:
        llm.fast_forward = chosen
    return {"mode": "raw", "prompt_tokens": first.usage.prompt_tokens,
            "prompt_tokens_per_s": round(prompt_tps, 1),
            "generation_tokens_per_s": round(free, 1), "generated": free_n,
            "stepwise_tokens_per_s": round(stepwise, 1), "stepwise_generated": stepwise_n,
            "ratio_stepwise_unconstrained": round(stepwise / free, 2),
            "constrained_tokens_per_s": round(bound, 1), "constrained_generated": bound_n,
            "ratio_constrained_unconstrained": round(bound / free, 2)}


def draft_rows(rows: list[dict[str, Any]], models: list[str], threads: int) -> None:
    """Each tour goal warm, without then with drafts, per model; then tokens/s under the
    tree grammar three ways."""
    from localagent.agent import Agent
    from localagent.llm import load_llm

    for name in models:
        llm = load_llm(name, n_threads=threads)
        llm.set_prompt_cache(None)  # type: ignore[attr-defined]
        agent = Agent(llm, examples=True)
        for planner, goal in TOUR:
            for drafts in (False, True):
                llm.drafts = drafts  # type: ignore[attr-defined]
                agent.run(INVOICE_WARMUP, planner=planner)
                llm.draft_stats.clear()  # type: ignore[attr-defined]
                start = time.perf_counter()
                result = agent.run(goal, planner=planner)
                seconds = time.perf_counter() - start
                u = result.to_dict().get("usage") or {}
                stats = llm.draft_stats  # type: ignore[attr-defined]
                rows.append({"mode": "drafts", "model": name, "planner": planner,
                             "drafts": drafts, "seconds": round(seconds, 2),
                             "generated": u.get("completion_tokens", 0),
                             "evaluated": u.get("prompt_tokens_evaluated", 0),
                             "drafted": sum(d.drafted for d in stats),
                             "accepted": sum(d.accepted for d in stats),
                             "answer": result.answer})
        rows.append({"mode": "plan-speed", "model": name, **plan_speed(llm, agent)})
        llm.close()


def plan_speed(llm: Any, agent: Any) -> dict[str, Any]:
    """Median tokens/s of three greedy tree plans for the invoice goal (its prompt cached):
    token by token, with fast-forward, with drafts; the same text each way."""
    from localagent.planners.tree import TreePlanner

    planner = TreePlanner(agent.llm, agent.tools_for(INVOICE), agent.settings)
    tools = planner.tools_for(INVOICE)
    prompt = llm.format_chat(planner.messages(INVOICE, tools))
    constraint = planner.constraint(tools, INVOICE)
    out: dict[str, Any] = {}
    texts = set()
    for label, ff, drafts in (("stepwise", False, False), ("fast_forward", True, False),
                              ("drafts", True, True)):
        llm.fast_forward, llm.drafts = ff, drafts
        llm.complete(prompt, max_tokens=200, constraint=constraint)
        runs = [llm.complete(prompt, max_tokens=200, constraint=constraint)
                for _ in range(3)]
        texts.update(r.text for r in runs)
        out[label] = round(sorted(r.usage.completion_tokens / r.usage.seconds
                                  for r in runs)[1], 1)
    llm.fast_forward, llm.drafts = None, True
    out["ratio_drafts_stepwise"] = round(out["drafts"] / out["stepwise"], 2)
    out["same_text"] = len(texts) == 1
    return out


def print_drafts(rows: list[dict[str, Any]]) -> None:
    pairs: dict[tuple[str, str], dict[bool, dict[str, Any]]] = {}
    for r in rows:
        if r["mode"] == "drafts":
            pairs.setdefault((r["model"], r["planner"]), {})[r["drafts"]] = r
    if pairs:
        print(f"{'model':30} {'planner':10} {'plain s':>7} {'drafts s':>8} {'ratio':>5} "
              f"{'tokens':>6} {'accepted':>14}  same answer")
    for (model, planner), by in pairs.items():
        off, on = by.get(False), by.get(True)
        if not (off and on):
            continue
        rate = f"{on['accepted']}/{on['drafted']}"
        print(f"{model:30} {planner:10} {off['seconds']:7.2f} {on['seconds']:8.2f} "
              f"{off['seconds'] / max(on['seconds'], 1e-9):5.2f} {on['generated']:6} "
              f"{rate:>14}  {'yes' if off['answer'] == on['answer'] else 'NO'}")
    for r in rows:
        if r["mode"] == "plan-speed":
            print(f"{r['model']}: tree plan tokens/s token by token {r['stepwise']}, "
                  f"fast-forward {r['fast_forward']}, drafts {r['drafts']} (ratio "
                  f"{r['ratio_drafts_stepwise']}; same text: {r['same_text']})")


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'mode':11} {'goal':40} {'prompt':>6} {'eval':>6} {'reused':>6} {'disk':>6} "
          f"{'gen':>4} {'llm s':>6} {'run s':>6} {'wall s':>6}  ok")
    for r in rows:
        if r["mode"] == "raw":
            continue
        wall = f"{r['wall_s']:6.1f}" if r.get("wall_s") is not None else "     -"
        print(f"{r['mode']:11} {r['goal'][:40]:40} {r['prompt_tokens']:6} {r['evaluated']:6} "
              f"{r['reused']:6} {r['loaded']:6} {r['generated']:4} {r['llm_s']:6.1f} "
              f"{r['agent_s']:6.1f} {wall}  {'yes' if r['ok'] else 'no'}"
              + (f"  ({r['error'][:60]})" if r.get("error") else ""))
    for r in rows:
        if r["mode"] == "raw":
            print(f"raw: prompt {r['prompt_tokens_per_s']} tokens/s ({r['prompt_tokens']} "
                  f"tokens), generation {r['generation_tokens_per_s']} tokens/s unconstrained "
                  f"({r['generated']} tokens); under the tree grammar "
                  f"{r['stepwise_tokens_per_s']} token by token ({r['stepwise_generated']} "
                  f"tokens, ratio {r['ratio_stepwise_unconstrained']}) and "
                  f"{r['constrained_tokens_per_s']} with fast-forward "
                  f"({r['constrained_generated']} tokens, ratio "
                  f"{r['ratio_constrained_unconstrained']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, from {', '.join(MODES)}")
    parser.add_argument("--goals", type=int, default=6, help="the first N goals (1..6)")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON lines here")
    parser.add_argument("--delay", type=float, default=1.0,
                        help="streaming: seconds each tool takes")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="drafts, streaming: comma-separated catalog names or .gguf paths")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown or not 1 <= args.goals <= 6:
        parser.error(f"unknown mode(s) {', '.join(unknown)}" if unknown else "--goals: 1..6")
    rows = Rows(args.out)
    models = [m for m in args.models.split(",") if m]
    if set(modes) <= {"drafts", "streaming"}:
        if "drafts" in modes:
            draft_rows(rows, models, args.threads)
            print_drafts(rows)
        if "streaming" in modes:
            stream_rows(rows, models, args.threads, args.delay)
        return 0
    all_goals, warmups, suite = goals(args.goals)
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        work = Path(tmp)
        index = work / "index"
        build_index([*all_goals, *warmups.values()], index)
        for i, goal in enumerate(all_goals):
            home = work / f"home-{i}"
            if "cold" in modes:
                rows.append(row("cold", goal, run_process(goal, home, index, args.threads),
                                suite))
            if "disk" in modes:
                rows.append(row("disk", goal, run_process(goal, home, index, args.threads),
                                suite))
        if "other" in modes:
            shared = work / "home-shared"
            for goal in all_goals:
                rows.append(row("other", goal, run_process(goal, shared, index, args.threads),
                                suite))
        if "warm" in modes or "raw" in modes:
            llm, agent = warm_rows(rows, all_goals, warmups, args.threads, suite,
                                   keep="warm" in modes)
            if "raw" in modes and agent is not None:
                rows.append(raw_speed(llm, agent))
    print(f"threads {args.threads}, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs at the end")
    print_table(rows)
    if "drafts" in modes:
        draft_rows(rows, models, args.threads)
        print_drafts(rows)
    if "streaming" in modes:
        stream_rows(rows, models, args.threads, args.delay)
    return 0


def stream_rows(rows: list[dict[str, Any]], models: list[str], threads: int,
                delay: float) -> None:
    """The streaming mode: runs per model, then one summary line per (model, planner)."""
    from localagent.bench.streaming import streaming_rows
    from localagent.llm import load_llm

    for name in models:
        llm = load_llm(name, n_threads=threads)
        llm.set_prompt_cache(None)  # type: ignore[attr-defined]
        for item in streaming_rows(llm, name, delay=delay):
            rows.append(item)
            if item["mode"] == "streaming-summary":
                print(f"{name} {item['planner']}: {item['without']} s without streaming, "
                      f"{item['with']} s with ({item['lower']:.0%} lower)", flush=True)
        llm.close()


class Rows(list[dict[str, Any]]):
    """The result rows; each is also appended to `out` (JSON lines) as soon as it exists."""

    def __init__(self, out: Path | None) -> None:
        super().__init__()
        self.out = out

    def append(self, item: dict[str, Any]) -> None:
        super().append(item)
        if self.out is not None:
            with open(self.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(item) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
