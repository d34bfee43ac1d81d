"""The tool index and filter on real Chroma (on disk, tmp_path) and the real MiniLM model."""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import pytest

from localagent.errors import IndexError_, UnknownFunctionError, UsageError
from localagent.retrieval import (
    CountingEmbedder,
    EmbeddingModelError,
    FilterOptions,
    MiniLMEmbedder,
    ToolIndex,
    filter_tools,
)
from localagent.retrieval.dataset import load_tools
from localagent.retrieval.embeddings import ChromaEmbeddingFunction
from localagent.retrieval.filter import ScoredTool, clause_halves, goal_queries, whole_plugins
from localagent.tools.registry import default_registry
from localagent.tools.spec import ToolSpec

INVOICE_GOAL = (
    "How much is the difference between the total of company C, F and the total of company A, E ?"
)


def _spec(plugin: str, name: str, description: str, **args: str) -> ToolSpec:
    props = {k: {"type": "number", "description": v} for k, v in args.items()}
    return ToolSpec(plugin, name, description, {"type": "object", "properties": props,
                                                "required": list(props)})


INVOICE_TOOLS = [
    _spec("DemoPlugin", "GetInvoice", "Get the invoice amount (a number) of a company.",
          company="The company's letter, one of A, B, C, D, E, F."),
    _spec("DemoPlugin", "Total", "Add two numbers and return their total (sum).",
          value1="The first number to add.", value2="The second number to add."),
    _spec("DemoPlugin", "Diff",
          "Subtract the second number from the first and return the difference (value1 - value2).",
          value1="The number to subtract from.", value2="The number to subtract."),
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def counting(minilm: MiniLMEmbedder) -> CountingEmbedder:
    return CountingEmbedder(minilm)


@pytest.fixture(scope="module")
def catalog() -> list[ToolSpec]:
    return load_tools()


def _sample(catalog: list[ToolSpec], n: int, seed: int = 0) -> list[ToolSpec]:
    pool = [s for s in catalog if s.name not in {"GetInvoice", "Total", "Diff"}]
    return random.Random(seed).sample(pool, n)


# --- sync: embed only what changed ---------------------------------------------------------


def test_reindex_with_no_change_embeds_nothing(tmp_path: Path, counting: CountingEmbedder,
                                               catalog: list[ToolSpec]) -> None:
    specs = _sample(catalog, 40)
    first = ToolIndex(tmp_path / "idx", counting).sync(specs)
    assert (first.added, first.embedded, first.unchanged) == (40, 40, 0)
    calls = counting.calls
    second = ToolIndex(tmp_path / "idx", counting).sync(specs)  # reopened from disk
    assert (second.added, second.updated, second.removed, second.unchanged) == (0, 0, 0, 40)
    assert second.embedded == 0
    assert counting.calls == calls  # the embedder was not called at all


def test_changed_description_is_reembedded(tmp_path: Path, counting: CountingEmbedder,
                                           catalog: list[ToolSpec]) -> None:
    specs = _sample(catalog, 30, seed=1)
    index = ToolIndex(tmp_path, counting)
    index.sync(specs)
    texts_before = counting.texts
    changed = dataclasses.replace(
        specs[0], description="Launches a rocket to the international space station.")
    report = index.sync([changed, *specs[1:]])
    assert (report.updated, report.embedded, report.unchanged) == (1, 1, 29)
    assert counting.texts == texts_before + 1
    assert index.stored_hashes()[changed.qualified_name] == changed.content_hash
    assert index.search("send a rocket into orbit", top_k=1)[0].qualified_name == \
        changed.qualified_name


def test_removed_tool_is_deleted_and_never_found(tmp_path: Path, counting: CountingEmbedder,
                                                 catalog: list[ToolSpec]) -> None:
    specs = _sample(catalog, 20, seed=2) + [INVOICE_TOOLS[0]]
    index = ToolIndex(tmp_path, counting)
    index.sync(specs)
    report = index.sync(specs[:-1])
    assert (report.removed, report.embedded) == (1, 0)
    assert INVOICE_TOOLS[0].qualified_name not in index.stored_hashes()
    hits = index.search("get the invoice amount of a company", top_k=20)
    assert INVOICE_TOOLS[0].qualified_name not in {h.qualified_name for h in hits}


def test_sync_without_prune_keeps_other_functions(tmp_path: Path, minilm: MiniLMEmbedder,
                                                  catalog: list[ToolSpec]) -> None:
    specs = _sample(catalog, 10, seed=3)
    index = ToolIndex(tmp_path, minilm)
    index.sync(specs)
    report = index.sync(INVOICE_TOOLS, prune=False)
    assert (report.added, report.removed) == (3, 0)
    assert index.count() == 13


def test_collection_uses_our_embedding_function(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    """Chroma's default (downloading) embedding function is never attached."""
    index = ToolIndex(tmp_path, minilm)
    index.sync(INVOICE_TOOLS)
    ef = index._collection._embedding_function
    assert isinstance(ef, ChromaEmbeddingFunction) and ef.embedder is minilm
    res = index._collection.query(query_texts=["subtract two numbers"], n_results=1)
    assert res["ids"][0] == ["DemoPlugin.Diff"]


# --- filtering ----------------------------------------------------------------------------


def _other_letters(text: str) -> str:
    """Every letter replaced by another one of the other case (CJK characters included)."""
    return "".join(("q" if c.isupper() or not c.islower() else "Z") if c.isalpha() else c
                   for c in text)


@pytest.mark.parametrize("goal", [
    INVOICE_GOAL,
    "Get the pages of Salt and Glass and then add them to the pages of the other book by Reyes",
    "Wie viele Seiten mehr hat Ashes of Meridian als The Copper Orchard?",
    "¿Cuánto cobra Dev al mes, si su salario anual se paga en 12 partes iguales?",
    "海王星和天王星的卫星数量相差多少？先查两者，再相减。",
])
def test_clause_split_reads_no_words(goal: str) -> None:
    """Issue 20: the split of a goal into the texts it is searched with (clauses at
    punctuation, halves of long clauses) depends on no word of any language and not on
    capitalisation: with every letter replaced, the same texts come out, letters replaced."""
    other = _other_letters(goal)
    assert other != goal
    assert goal_queries(other) == [_other_letters(q) for q in goal_queries(goal)]
    assert clause_halves(other) == [_other_letters(h) for h in clause_halves(goal)]


def test_long_clause_halves_isolate_a_step() -> None:
    assert clause_halves(INVOICE_GOAL) == ["How much is the difference",
                                           "between the total of company C"]
    assert clause_halves("What is 100 EUR in USD?") == []


def test_invoice_tools_found_among_200_distractors(tmp_path: Path, minilm: MiniLMEmbedder,
                                                   catalog: list[ToolSpec]) -> None:
    specs = _sample(catalog, 200, seed=4) + INVOICE_TOOLS
    index = ToolIndex(tmp_path, minilm)
    kept = filter_tools(INVOICE_GOAL, specs, FilterOptions(max_relevant_functions=5), index)
    names = [t.spec.qualified_name for t in kept]
    assert len(names) == 5
    assert {t.qualified_name for t in INVOICE_TOOLS} <= set(names), names
    assert [t.score for t in kept] == sorted((t.score for t in kept), reverse=True)


def test_excluded_and_included_work_together(tmp_path: Path, minilm: MiniLMEmbedder,
                                             catalog: list[ToolSpec]) -> None:
    weather = [s for s in catalog if s.plugin == "weather"]
    specs = _sample(catalog, 30, seed=5) + INVOICE_TOOLS
    specs += [w for w in weather if w not in specs]
    options = FilterOptions(
        max_relevant_functions=2,
        excluded_functions=("DemoPlugin.Total",),
        excluded_plugins=("weather",),
        included_functions=("GetCurrentTime", "DemoPlugin.Diff"),
    )
    if not any(s.name == "GetCurrentTime" for s in specs):
        specs.append(next(s for s in catalog if s.name == "GetCurrentTime"))
    kept = filter_tools(INVOICE_GOAL + " And what is the weather?", specs, options,
                        ToolIndex(tmp_path, minilm))
    names = {t.spec.qualified_name for t in kept}
    assert "DemoPlugin.Total" not in names  # excluded function
    assert not any(n.startswith("weather.") for n in names)  # excluded plugin
    assert {"utilities.GetCurrentTime", "DemoPlugin.Diff"} <= names  # included, any score
    assert "DemoPlugin.GetInvoice" in names  # among the 2 best
    assert 2 <= len(names) <= 4  # the 2 best plus the included ones not among them


def test_threshold_keeps_only_close_functions_but_always_included(
        tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    index = ToolIndex(tmp_path, minilm)
    everything = filter_tools(INVOICE_GOAL, INVOICE_TOOLS, FilterOptions(relevancy_threshold=0.0),
                              index)
    scores = {t.spec.name: t.score for t in everything}
    cut = sorted(scores.values())[1]  # drops exactly the lowest
    kept = filter_tools(INVOICE_GOAL, INVOICE_TOOLS, FilterOptions(relevancy_threshold=cut), index)
    assert len(kept) == 2 and all(t.score >= cut for t in kept)
    none = filter_tools(INVOICE_GOAL, INVOICE_TOOLS,
                        FilterOptions(relevancy_threshold=1.0, included_functions=("Total",)),
                        index)
    assert [t.spec.name for t in none] == ["Total"]


def test_whole_plugins_adds_a_plugin_only_when_all_of_it_fits() -> None:
    tools = {n: _spec(p, n, "") for p, n in (("P", "a"), ("P", "b"), ("P", "c"),
                                             ("Q", "x"), ("Q", "y"), ("R", "r"))}
    allowed = list(tools.values())
    kept = [ScoredTool(tools["a"], 0.9), ScoredTool(tools["x"], 0.8)]
    # P (best score) needs 2 more, Q 1 more: both fit in 5, only P in 4, none in 3
    assert whole_plugins(kept, allowed, 5) == ["P.b", "P.c", "Q.y"]
    assert whole_plugins(kept, allowed, 4) == ["P.b", "P.c"]
    assert whole_plugins(kept, allowed, 3) == ["Q.y"]  # P does not fit whole; Q does
    assert whole_plugins(kept, allowed, 2) == []
    assert whole_plugins(kept, allowed[:1] + allowed[3:], 9) == ["Q.y"]  # only allowed ones


def test_two_goals_over_the_example_plugins_get_the_same_offer(
        tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    """The point of `whole_plugins`: goals over the same tools that keep different
    functions of one plugin get the same functions (and so share a prompt prefix)."""
    specs = default_registry(examples=True).specs()
    arithmetic = ("MathPlugin.add", "MathPlugin.subtract", "MathPlugin.multiply",
                  "MathPlugin.divide")
    index = ToolIndex(tmp_path, minilm)
    goals = ("What is the total of the invoices of A and C?",
             "What is the invoice of B minus the invoice of D?")

    def offer(whole: bool) -> list[set[str]]:
        options = FilterOptions(max_relevant_functions=6, included_functions=arithmetic,
                                whole_plugins=whole)
        return [{t.spec.qualified_name for t in filter_tools(g, specs, options, index)}
                for g in goals]

    each, whole = offer(False), offer(True)
    assert each[0] != each[1]  # function by function, the offers differ ...
    assert whole[0] == whole[1]  # ... and whole plugins make them one
    assert all(e <= w for e, w in zip(each, whole, strict=True))
    assert all(len(w) <= 6 + len(arithmetic) for w in whole)
    plugins = {name.split(".")[0] for name in whole[0]}
    assert all(s.qualified_name in whole[0] for s in specs
               if s.plugin in plugins and s.plugin != "MathPlugin")


@pytest.mark.parametrize("kwargs", [
    {"relevancy_threshold": 1.5}, {"relevancy_threshold": -0.1},
    {"max_relevant_functions": -1}, {"max_relevant_functions": 2.5},
    {"included_functions": ("Diff",), "excluded_functions": ("Diff",)},
])
def test_bad_filter_options_are_usage_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError) as err:
        FilterOptions(**kwargs)  # type: ignore[arg-type]
    assert err.value.exit_code == 2


def test_unknown_names_in_options_are_errors(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    with pytest.raises(UnknownFunctionError, match="Nope"):
        filter_tools("x", INVOICE_TOOLS, FilterOptions(included_functions=("Nope",)),
                     ToolIndex(tmp_path, minilm))


# --- bad index folders and models -----------------------------------------------------------


def test_corrupt_index_is_set_aside_and_rebuilt(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    path = tmp_path / "idx"
    path.mkdir()
    garbage = os.urandom(4096)
    (path / "chroma.sqlite3").write_bytes(garbage)
    index = ToolIndex(path, minilm)  # more cases: tests/test_concurrency.py
    assert len(index.warnings) == 1 and "corrupt" in index.warnings[0]
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("idx.corrupt-")]
    assert len(aside) == 1 and (aside[0] / "chroma.sqlite3").read_bytes() == garbage
    assert index.sync(INVOICE_TOOLS).embedded == 3


class _OtherModel:
    """The real model under the same name but another fingerprint (e.g. other weights)."""

    def __init__(self, inner: MiniLMEmbedder, fingerprint: str) -> None:
        self.inner, self.name, self.dim, self.fingerprint = inner, inner.name, inner.dim, fingerprint

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed(texts)


def test_index_built_with_another_model_is_refused(tmp_path: Path,
                                                   minilm: MiniLMEmbedder) -> None:
    ToolIndex(tmp_path, minilm).sync(INVOICE_TOOLS)
    with pytest.raises(IndexError_, match="another embedding model") as err:
        ToolIndex(tmp_path, _OtherModel(minilm, "other-weights"))
    assert "localagent tools index --rebuild" in err.value.one_line()
    rebuilt = ToolIndex(tmp_path, _OtherModel(minilm, "other-weights"), rebuild=True)
    assert rebuilt.sync(INVOICE_TOOLS).embedded == 3


def test_unwritable_index_location(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(IndexError_, match="cannot create"):
        ToolIndex(blocker / "idx", minilm)
    with pytest.raises(IndexError_, match="not a folder"):
        ToolIndex(blocker, minilm)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to read-only folders")
def test_read_only_index_folder(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    path = tmp_path / "idx"
    path.mkdir()
    path.chmod(0o500)
    try:
        with pytest.raises(IndexError_, match="not writable"):
            ToolIndex(path, minilm)
    finally:
        path.chmod(0o700)


def test_folder_that_is_not_an_index_is_left_alone(tmp_path: Path,
                                                   minilm: MiniLMEmbedder) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(IndexError_, match="not a localagent tool index"):
        ToolIndex(tmp_path, minilm)
    with pytest.raises(IndexError_, match="refusing"):
        ToolIndex(tmp_path, minilm, rebuild=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_embedding_model_that_cannot_be_loaded(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="not found") as err:
        MiniLMEmbedder(tmp_path / "missing").embed(["hello"])
    assert err.value.hint and "pip install" in err.value.hint
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    (broken / "modules.json").write_text("{ not json")
    with pytest.raises(EmbeddingModelError, match="cannot load"):
        MiniLMEmbedder(broken).embed(["hello"])
    assert isinstance(err.value, IndexError_) and err.value.exit_code == 2
