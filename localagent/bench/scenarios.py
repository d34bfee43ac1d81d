"""Benchmark fixtures: the four documented seed scenarios, each a goal, its tools, and how
to judge the outcome (with the expected answers).

They live with the benchmark, not with the planners: no planner may read them. Shared by
the acceptance tests and `scripts/bench_scenarios.py`, so both measure the same thing.
Each scenario offers the plugins its story names (as Semantic Kernel's samples load only
the plugins of the sample); the judges check the real outcome, not the form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localagent.agent import AgentResult
from localagent.llm.base import LLM
from localagent.tools.registry import ToolRegistry

INVOICE = ("How much is the difference between the total of company C, F and the total of "
           "company A, E ?")
# The invoice goal in Spanish, German and Chinese: only the companies and the list marks
# are shared with the English one.
INVOICE_TRANSLATED = (
    "¿Cuánto es la diferencia entre el total de la empresa C, F y el total de la empresa A, E?",
    ("Wie groß ist der Unterschied zwischen der Summe von Firma C, F und der Summe von "
     "Firma A, E?"),
    "公司 C、F 的总额与公司 A、E 的总额之差是多少？",
)
FURINA = "What's the person Furina's age raised to the 0.43 power?"
BET = ("I bet my friend 100 EUR that it would rain in Athens today. If I won, how many USD "
       "is that?")
POEMS = ("Write a few short poems for Valentine's day in Shakespeare's style, in French, "
         "in uppercase")


@dataclass(frozen=True)
class Scenario:
    name: str
    goal: str
    planners: tuple[str, ...]  # the planners expected to solve it
    registry: Callable[[LLM], ToolRegistry]
    judge: Callable[[AgentResult], str | None]  # None when solved, else why not


def _registry(llm: LLM, *plugins: Any, exclude: tuple[str, ...] = ()) -> ToolRegistry:
    registry = ToolRegistry(llm)
    for plugin in plugins:
        if isinstance(plugin, str):
            registry.load(plugin)
        else:
            registry.add_plugin(plugin)
    if exclude:
        kept = ToolRegistry(llm)
        for name in registry.names():
            if name not in exclude:
                kept.add_tool(registry.get(name))
        return kept
    return registry


def calls_of(result: AgentResult) -> list[dict[str, Any]]:
    """Every finished call (function, args, result) of a run, in order, for any planner."""
    out: list[dict[str, Any]] = []
    for step in result.steps:
        if step.get("kind") == "call_finished":
            out.append(step)
        elif isinstance(step.get("calls"), list):  # a tool-calling turn
            out.extend({"function": c["function"], "args": c["args"], "result": c["result"]}
                       for c in step["calls"])
        elif step.get("function") and "thought" in step:  # a ReAct step
            out.append({"function": step["function"], "args": step.get("args"),
                        "result": step.get("observation")})
    return out


def judge_invoice(result: AgentResult) -> str | None:
    if result.answer not in (21100, 21100.0):
        return f"answer {result.answer!r}, expected 21100 ({result.error})"
    if result.plan is not None:
        root = result.plan["root"]
        nested = [a.get("function") for a in root["args"].values() if isinstance(a, dict)]
        if root["function"] != "DemoPlugin.Diff" or nested != ["DemoPlugin.Total"] * 2:
            return f"plan is not Diff over two Totals: {root}"
    return None


def judge_furina(result: AgentResult) -> str | None:
    calls = calls_of(result)
    if not re.search(r"3\.29", str(result.answer)):
        return f"answer {result.answer!r}, expected 3.294... ({result.error})"
    if len(calls) != 2 or calls[0]["result"] != 16:
        return f"expected two tool steps starting with the age 16, got {calls}"
    return None


def bet_judge(rained: bool) -> Callable[[AgentResult], str | None]:
    def judge(result: AgentResult) -> str | None:
        calls = calls_of(result)
        weather = [c for c in calls if c["function"].startswith("WeatherPlugin.")]
        converts = [c for c in calls if c["function"] == "CurrencyPlugin.ConvertCurrency"]
        if not weather:
            return f"never looked at the weather: {calls}"
        if result.answer is None:
            return f"no answer: {result.error}"
        if rained:
            if not converts or converts[0]["result"] != 108.0:
                return f"expected a conversion of 100 EUR to 108.0 USD, got {converts}"
            if "108" not in str(result.answer):
                return f"answer {result.answer!r} does not give 108 USD"
        elif converts:
            return f"converted although it did not rain: {converts}"
        return None

    return judge


def judge_poems(result: AgentResult) -> str | None:
    if result.plan is None or not result.plan.get("subtasks"):
        return f"no sequential plan ({result.error})"
    steps = [s["function"] for s in result.plan["subtasks"]]
    if steps[-1] != "TextPlugin.uppercase":
        return f"chain does not end in TextPlugin.uppercase: {steps}"
    if "WriterPlugin.ShortPoem" not in steps[:-1]:  # a real chain writes the poems
        return f"no step writes the poems before the uppercase: {steps}"
    last_input = result.plan["subtasks"][-1].get("args", {}).get("input")
    if isinstance(last_input, str) and not last_input.startswith("$"):
        # seen: every WriterPlugin function in manual order, then uppercase("<the topic>")
        return f"the uppercase step is given text, not the chain's output: {last_input!r}"
    text = str(result.answer or "")
    if not text.strip() or text != text.upper() or not re.search(r"[A-Z]", text):
        return f"final text is not uppercase: {text[:80]!r} ({result.error})"
    return None


def scenarios() -> list[Scenario]:
    from localagent.samples import PROMPT_PLUGINS_DIR
    from localagent.tools.builtins.math_plugin import MathPlugin
    from localagent.tools.builtins.text_plugin import TextPlugin
    from localagent.tools.examples import (
        CurrencyPlugin,
        DemoPlugin,
        PersonalAssistant,
        WeatherPlugin,
    )

    only_calc = tuple(f"MathPlugin.{n}" for n in
                      ("add", "subtract", "multiply", "divide", "power", "sqrt"))
    writer = str(PROMPT_PLUGINS_DIR / "WriterPlugin")
    return [
        Scenario("invoice", INVOICE, ("tree",),
                 lambda llm: _registry(llm, DemoPlugin), judge_invoice),
        Scenario("furina", FURINA, ("react", "tools"),
                 lambda llm: _registry(llm, PersonalAssistant, MathPlugin, exclude=only_calc),
                 judge_furina),
        Scenario("bet-rain", BET, ("tools", "react"),
                 lambda llm: _registry(llm, WeatherPlugin("rain"), CurrencyPlugin),
                 bet_judge(True)),
        Scenario("bet-dry", BET, ("tools", "react"),
                 lambda llm: _registry(llm, WeatherPlugin("dry"), CurrencyPlugin),
                 bet_judge(False)),
        Scenario("poems", POEMS, ("sequential",),
                 lambda llm: _registry(llm, writer, TextPlugin), judge_poems),
    ]
