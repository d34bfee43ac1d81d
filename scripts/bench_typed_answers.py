"""Typed answers on a small suite of typed goals: how often the model fills each field
from the tools' results, and what the answer step costs (issue 46).

Usage: python scripts/bench_typed_answers.py [--models a,b] [--planners tree,tools]
                                             [--threads N] [--out rows.jsonl]

Tools return records (`-> dict`, keys known only at run time): a book catalogue, a city
gazetteer, an order desk. Each goal asks for a declared type (a Pydantic model whose field
names differ from the record's keys, a TypedDict, a `Literal`, `int`, `float`,
`datetime.date`, `bool`), in English, Spanish and German. A field counts as filled from the
results when its value equals the record's value it stands for. Printed per model and
planner: goals with every field right, fields right, and the answer step's cost (the
`answer_typed` event: whether it generated, tokens, seconds).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from typing_extensions import TypedDict

from localagent import tool

BOOKS = {"Frankenstein": {"author": "Mary Shelley", "year": 1818, "pages": 280},
         "Beloved": {"author": "Toni Morrison", "year": 1987, "pages": 324}}
CITIES = {"Lyon": {"country": "France", "population_millions": 0.52, "river": "Rhone"},
          "Porto": {"country": "Portugal", "population_millions": 0.23, "river": "Douro"}}
ORDERS = {17: {"customer": "Ada Brook", "total": 42.5, "status": "shipped",
               "placed": "2024-03-05"},
          23: {"customer": "Li Wei", "total": 19.9, "status": "pending",
               "placed": "2024-04-11"}}


class Records:
    """Look-ups whose results are records."""

    @tool
    def book(self, title: str) -> dict:
        """Look up a book by its title: its author, year and page count."""
        return {"title": title, **BOOKS.get(title, {})}

    @tool
    def city(self, name: str) -> dict:
        """Look up a city: its country, population in millions and river."""
        return {"name": name, **CITIES.get(name, {})}

    @tool
    def order(self, order_id: int) -> dict:
        """Look up an order by its number: customer, total, status and date placed."""
        return {"id": order_id, **ORDERS.get(order_id, {})}


class Authorship(BaseModel):
    writer: str
    page_count: int


class Place(BaseModel):
    nation: str
    inhabitants_millions: float


class OrderSummary(TypedDict):
    buyer: str
    amount: float


@dataclass(frozen=True)
class TypedGoal:
    key: str
    output_type: Any
    expected: dict[str, Any]  # field -> the record's value (a scalar type: key "value")
    phrasings: tuple[str, str, str]  # en, es, de


GOALS = (
    TypedGoal("authorship", Authorship, {"writer": "Mary Shelley", "page_count": 280}, (
        "Who wrote Frankenstein and how many pages does it have?",
        "¿Quién escribió Frankenstein y cuántas páginas tiene?",
        "Wer hat Frankenstein geschrieben und wie viele Seiten hat es?")),
    TypedGoal("place", Place, {"nation": "Portugal", "inhabitants_millions": 0.23}, (
        "In which country is Porto and how many million people live there?",
        "¿En qué país está Oporto y cuántos millones de personas viven allí?",
        "In welchem Land liegt Porto und wie viele Millionen Menschen leben dort?")),
    TypedGoal("summary", OrderSummary, {"buyer": "Li Wei", "amount": 19.9}, (
        "Who placed order 23 and for how much?",
        "¿Quién hizo el pedido 23 y por cuánto?",
        "Wer hat Bestellung 23 aufgegeben und über welchen Betrag?")),
    TypedGoal("status", Literal["shipped", "pending", "cancelled"], {"value": "shipped"}, (
        "What is the status of order 17?",
        "¿Cuál es el estado del pedido 17?",
        "Wie ist der Status der Bestellung 17?")),
    TypedGoal("pages", int, {"value": 324}, (
        "How many pages does Beloved have?",
        "¿Cuántas páginas tiene Beloved?",
        "Wie viele Seiten hat Beloved?")),
    TypedGoal("placed", datetime.date, {"value": datetime.date(2024, 4, 11)}, (
        "On which date was order 23 placed?",
        "¿En qué fecha se hizo el pedido 23?",
        "An welchem Datum wurde Bestellung 23 aufgegeben?")),
    TypedGoal("year", int, {"value": 1987}, (
        "In which year was Beloved published?",
        "¿En qué año se publicó Beloved?",
        "In welchem Jahr erschien Beloved?")),
)
LANGUAGES = ("en", "es", "de")


def fields_of(answer: Any, goal: TypedGoal) -> dict[str, Any]:
    if set(goal.expected) == {"value"}:
        return {"value": answer}
    if isinstance(answer, BaseModel):
        return answer.model_dump()
    return dict(answer) if isinstance(answer, dict) else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="qwen2.5-coder-1.5b-instruct,"
                                             "qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--planners", default="tree,tools")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from localagent.agent import Agent
    from localagent.llm import load_llm
    from localagent.tools.registry import ToolRegistry

    registry = ToolRegistry()
    registry.add_plugin(Records())
    rows: list[dict[str, Any]] = []
    for model in args.models.split(","):
        llm = load_llm(model, n_threads=args.threads)
        llm.set_prompt_cache(None)  # type: ignore[attr-defined]
        agent = Agent(llm, registry=registry)
        for planner in args.planners.split(","):
            for goal in GOALS:
                for language, text in zip(LANGUAGES, goal.phrasings):
                    events: list[Any] = []
                    start = time.perf_counter()
                    result = agent.run(text, planner=planner, output_type=goal.output_type,
                                       on_event=lambda e, ev=events: ev.append(e))
                    seconds = time.perf_counter() - start
                    typed = [e.detail for e in events
                             if getattr(e, "kind", "") == "answer_typed"]
                    got = fields_of(result.answer, goal) if result.ok else {}
                    right = {f: got.get(f) == v for f, v in goal.expected.items()}
                    row = {"model": model, "planner": planner, "goal": goal.key,
                           "language": language, "ok": result.ok, "error": result.error,
                           "answer": result.answer_json(), "fields_right": right,
                           "all_right": all(right.values()), "seconds": round(seconds, 2),
                           "step": typed[0] if typed else None}
                    rows.append(row)
                    print(json.dumps(row, default=str), flush=True)
        llm.close()
    if args.out:
        args.out.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    print("\n| model | planner | goals all right | fields right | en / es / de | step "
          "generated | step tokens (mean) | step s (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for planner in args.planners.split(","):
            mine = [r for r in rows if r["model"] == model and r["planner"] == planner]
            fields = [v for r in mine for v in r["fields_right"].values()]
            per_language = " / ".join(
                f"{sum(r['all_right'] for r in mine if r['language'] == lang)}/"
                f"{sum(1 for r in mine if r['language'] == lang)}" for lang in LANGUAGES)
            steps = [r["step"] for r in mine if r["step"]]
            generated = [s for s in steps if s["generated"]]
            tokens = statistics.mean(s["tokens"] for s in generated) if generated else 0
            secs = statistics.median(s["seconds"] for s in generated) if generated else 0
            print(f"| {model} | {planner} | {sum(r['all_right'] for r in mine)}/{len(mine)} | "
                  f"{sum(fields)}/{len(fields)} | {per_language} | {len(generated)}/"
                  f"{len(steps)} | {tokens:.1f} | {secs:.2f} |")


if __name__ == "__main__":
    main()
