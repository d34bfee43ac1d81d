"""Retrieval benchmark: quality, latency, indexing cost and prompt tokens saved.

Run: .venv/bin/python scripts/bench_retrieval.py [--sizes 1000,10000] [--top-k 5]

Data: benchmarks/retrieval/tools.txt (545 tool descriptions over 37 plugins) and
queries.txt (183 goals, each labelled with every function it needs), written for this
project. Quality is measured on those 545 tools. Latency at N tools pads the catalog with
synthetic variants: copy i of a tool moves to plugin `<plugin>_<vendor>` and its description
gets a vendor- and region-specific prefix, so every padded text is distinct and embedded
for real (no random vectors).

Metrics: recall@k = |expected in top k| / min(k, |expected|), averaged over queries (so a
one-tool query scores 1 at k=1 when it ranks first); MRR = mean of 1/rank of the first
expected tool (0 when none is in the top 50). Tokens: the planner manual
(`localagent.tools.manual.render_manual`) of all tools against that of the top-k, counted
with the default model's tokenizer (llama.cpp, vocab only) when available, else len/4.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from localagent.retrieval import CountingEmbedder, MiniLMEmbedder, ToolIndex
from localagent.retrieval.dataset import LabelledQuery, load_queries, load_tools
from localagent.retrieval.filter import search_goal
from localagent.tools.spec import ToolSpec

VENDORS = ["acme", "globex", "initech", "umbrella", "stark", "wayne", "hooli", "vandelay",
           "soylent", "tyrell", "cyberdyne", "wonka", "oscorp", "aperture", "massive",
           "pied", "dunder", "gringotts", "monarch", "nakatomi"]
REGIONS = ["EU", "US", "APAC", "LATAM", "UK", "Nordics", "DACH", "Benelux", "Iberia"]


def pad(specs: Sequence[ToolSpec], n: int) -> list[ToolSpec]:
    out = list(specs)
    i = 0
    while len(out) < n:
        base = specs[i % len(specs)]
        copy = i // len(specs)
        vendor, region = VENDORS[copy % len(VENDORS)], REGIONS[(i + copy) % len(REGIONS)]
        out.append(replace(
            base,
            plugin=f"{base.plugin}_{vendor}{copy // len(VENDORS) or ''}",
            description=f"For {vendor.title()} customers in the {region} region: "
                        f"{base.description}",
        ))
        i += 1
    return out


class VariantVectors:
    """An embedder for padded catalogs that embeds only the original descriptions.

    With `--vector-padding` a variant's vector is its original's real vector plus small
    deterministic noise (sigma 0.02 a dimension, then renormalised): the index holds N
    distinct, realistically clustered vectors for latency, without embedding N texts on a
    busy CPU. Indexing throughput is then Chroma's, not the model's, and is labelled so.
    """

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.fingerprint = inner.fingerprint
        self.cache: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        originals = [t.split("region: ", 1)[-1] if ": For " in t else t for t in texts]
        missing = [t for t in dict.fromkeys(originals) if t not in self.cache]
        self.cache.update(zip(missing, self.inner.embed(missing)))
        out = []
        for text, original in zip(texts, originals):
            vec = np.asarray(self.cache[original])
            if text != original:
                rng = np.random.default_rng(zlib.crc32(text.encode()))
                vec = vec + rng.normal(0, 0.02, vec.shape)
                vec = vec / np.linalg.norm(vec)
            out.append([float(x) for x in vec])
        return out


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def family(name: str) -> str:
    """`weather_acme.GetForecast` -> `weather.GetForecast`: a padded variant's original."""
    plugin, _, fn = name.partition(".")
    return f"{plugin.split('_')[0]}.{fn}"


def quality(index: ToolIndex, queries: Sequence[LabelledQuery],
            key: Callable[[str], str] = str, clauses: bool = False) -> dict[str, float]:
    r1, r5, rr = [], [], []
    for q in queries:
        hits = search_goal(q.query, index, 200) if clauses else index.search(q.query, top_k=200)
        ranked = list(dict.fromkeys(key(h.qualified_name) for h in hits))[:50]
        expected = set(q.expected)
        r1.append(len(expected & set(ranked[:1])) / min(1, len(expected)))
        r5.append(len(expected & set(ranked[:5])) / min(5, len(expected)))
        first = next((i for i, name in enumerate(ranked, 1) if name in expected), None)
        rr.append(1 / first if first else 0.0)
    return {"recall@1": statistics.mean(r1), "recall@5": statistics.mean(r5),
            "mrr": statistics.mean(rr)}


def misses(index: ToolIndex, queries: Sequence[LabelledQuery], k: int = 5) -> list[str]:
    lines = []
    for q in queries:
        top = [h.qualified_name for h in search_goal(q.query, index, k)]
        lost = [e for e in q.expected if e not in top]
        if lost:
            lines.append(f"  {q.query!r}: missing {lost}; top: {top[:3]}")
    return lines


def latency(index: ToolIndex, queries: Sequence[LabelledQuery],
            embedder: MiniLMEmbedder) -> tuple[list[float], list[float]]:
    """End-to-end search() times and Chroma-only query times, in milliseconds."""
    total, chroma = [], []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q.query, top_k=10)
        total.append((time.perf_counter() - t0) * 1000)
        vec = embedder.embed([q.query])
        t0 = time.perf_counter()
        index._collection.query(query_embeddings=vec, n_results=10)
        chroma.append((time.perf_counter() - t0) * 1000)
    return total, chroma


def token_counter() -> tuple[Callable[[str], int], str]:
    try:
        import llama_cpp

        from localagent.llm import ensure_model, load_catalog

        path = ensure_model(load_catalog().get("qwen2.5-coder-0.5b-instruct"))
        vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        return (lambda text: len(vocab.tokenize(text.encode(), add_bos=False)),
                "qwen2.5-coder-0.5b-instruct tokenizer")
    except Exception as exc:  # noqa: BLE001 (the benchmark still runs without the model)
        return (lambda text: max(1, len(text) // 4), f"len/4 approximation ({exc!r:.80})")


def tokens_saved(index: ToolIndex, specs: Sequence[ToolSpec],
                 queries: Sequence[LabelledQuery], k: int) -> None:
    from localagent.tools.manual import render_manual

    count, how = token_counter()
    by_name = {s.qualified_name: s for s in specs}
    full = count(render_manual(specs))
    filtered = [count(render_manual([by_name[h.qualified_name]
                                     for h in search_goal(q.query, index, k)]))
                for q in queries]
    mean = statistics.mean(filtered)
    print(f"prompt tokens ({how}): manual of all {len(specs)} tools {full}; "
          f"top-{k} manual mean {mean:.0f} (max {max(filtered)}); "
          f"saved {full - mean:.0f} tokens a prompt ({100 * (1 - mean / full):.1f}%)")


def index_timed(path: Path, specs: Sequence[ToolSpec], embedder: CountingEmbedder) -> None:
    t0 = time.perf_counter()
    index = ToolIndex(path, embedder)
    first = index.sync(specs)
    t1 = time.perf_counter()
    calls = embedder.calls
    second = ToolIndex(path, embedder).sync(specs)
    t2 = time.perf_counter()
    print(f"index {len(specs)} tools: first sync {t1 - t0:.2f} s "
          f"({first.embedded / (t1 - t0):.0f} tools/s, embedded {first.embedded}); "
          f"second sync, nothing changed: {t2 - t1:.3f} s, embedded {second.embedded}, "
          f"embedder calls {embedder.calls - calls} (ratio {(t2 - t1) / (t1 - t0):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--vector-padding", action="store_true",
                        help="pad with perturbed vectors of the originals (see VariantVectors)")
    parser.add_argument("--skip-quality", action="store_true",
                        help="skip the 545-tool index, quality and token measurements")
    parser.add_argument("--latency-queries", type=int, default=0,
                        help="time only the first N queries (0: all)")
    args = parser.parse_args()
    specs, queries = load_tools(), load_queries()
    print(f"labelled set: {len(specs)} tools in {len({s.plugin for s in specs})} plugins, "
          f"{len(queries)} queries ({sum(len(q.expected) > 1 for q in queries)} need >1 tool)")
    embedder = MiniLMEmbedder()
    t0 = time.perf_counter()
    embedder.embed(["warm up"])
    print(f"embedding model load: {time.perf_counter() - t0:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_quality:
            index_timed(Path(tmp) / "base", specs, CountingEmbedder(embedder))
            report_quality(ToolIndex(Path(tmp) / "base", embedder), specs, queries, args.top_k)
        timed = queries[: args.latency_queries or None]
        padder = VariantVectors(embedder) if args.vector_padding else embedder
        for size in (int(s) for s in args.sizes.split(",") if s):
            padded = pad(specs, size)
            label = "perturbed-vector padding" if args.vector_padding else "embedded padding"
            print(f"-- {size} tools ({label})")
            index_timed(Path(tmp) / f"n{size}", padded, CountingEmbedder(padder))
            big = ToolIndex(Path(tmp) / f"n{size}", padder)
            total, chroma = latency(big, timed, embedder)
            print(f"latency at {size} tools: search p50 {pct(total, .5):.1f} ms, "
                  f"p95 {pct(total, .95):.1f} ms (Chroma query alone p50 "
                  f"{pct(chroma, .5):.2f} ms, p95 {pct(chroma, .95):.2f} ms; "
                  f"{len(timed)} queries)")
            if not args.vector_padding:
                big_scores = quality(big, queries, key=family, clauses=True)
                print("  quality at {} tools, goal + clauses + halves (a vendor variant counts "
                      "as its original): recall@1 {recall@1:.3f}, recall@5 {recall@5:.3f}, "
                      "MRR {mrr:.3f}".format(size, **big_scores))


def report_quality(index: ToolIndex, specs: Sequence[ToolSpec],
                   queries: Sequence[LabelledQuery], top_k: int) -> None:
    multi = [q for q in queries if len(q.expected) > 1]
    for label, subset in (("all queries", queries), ("multi-tool queries", multi)):
        for how, clauses in (("goal only", False), ("goal + clauses + halves", True)):
            scores = quality(index, subset, clauses=clauses)
            print("quality on {} tools, {} ({}), {}: recall@1 {recall@1:.3f}, "
                  "recall@5 {recall@5:.3f}, MRR {mrr:.3f}".format(
                      len(specs), label, len(subset), how, **scores))
    lost = misses(index, queries)
    print(f"queries with an expected tool outside the top 5 (goal + clauses + halves): {len(lost)}")
    print("\n".join(lost[:15]))
    tokens_saved(index, specs, queries, top_k)


if __name__ == "__main__":
    main()
