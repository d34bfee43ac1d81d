"""External yardsticks: BFCL and NESTFUL loading, BFCL's own judge, NESTFUL's metrics, the
raw baseline's parser, and one real-model run of each side."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from localagent.bench.external import bfcl, nestful
from localagent.bench.external.packages import BFCL, NESTFUL, fetch
from localagent.bench.external.raw import read_tool_calls
from localagent.bench.external.run import ExternalRun, plan_external, run_external
from localagent.errors import UsageError
from localagent.planners.techniques import default_techniques, parse_spec


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("external")


@pytest.fixture(scope="session")
def bfcl_root(cache: Path) -> Path:
    return fetch(BFCL, cache)


@pytest.fixture(scope="session")
def nestful_root(cache: Path) -> Path:
    return fetch(NESTFUL, cache)


def test_fetch_checks_the_pinned_sha256_and_reuses_the_unpacked_folder(cache, bfcl_root):
    assert (bfcl_root / "bfcl_eval" / "data" / "BFCL_v4_simple_python.json").is_file()
    assert fetch(BFCL, cache) == bfcl_root  # second call: the marker matches, no download
    (bfcl_root / ".localagent-sha256").write_text("0" * 64)  # a foreign folder is redone
    assert fetch(BFCL, cache) == bfcl_root
    assert (bfcl_root / ".localagent-sha256").read_text() == BFCL.sha256


def test_bfcl_types_become_json_schema():
    schema = bfcl.json_schema({"type": "dict", "required": ["a", "gone"], "properties": {
        "a": {"type": "float", "description": "x"},
        "b": {"type": "tuple", "items": {"type": "dict", "properties": {"c": {"type": "any"}}}},
    }})
    assert schema == {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "number", "description": "x"},
        "b": {"type": "array", "items": {"type": "object", "properties": {"c": {}}}}}}


def test_bfcl_sample_is_evenly_spaced_and_judged_by_bfcls_checker(bfcl_root):
    cases = bfcl.load_cases(bfcl_root, ["simple_python", "irrelevance"], 4)
    assert [c.id for c in cases[:4]] == [f"simple_python_{i}" for i in (0, 100, 200, 300)]
    first = cases[0]
    assert first.goal.startswith("Find the area of a triangle")
    right = [{"calculate_triangle_area": {"base": 10, "height": 5}}]
    assert bfcl.judge(bfcl_root, first, right) is None
    assert "height" in bfcl.judge(bfcl_root, first,
                                  [{"calculate_triangle_area": {"base": 10, "height": 6}}])
    assert bfcl.judge(bfcl_root, first, []) == "no function called"
    irrelevant = cases[-1]
    assert irrelevant.answer is None and bfcl.judge(bfcl_root, irrelevant, []) is None
    assert bfcl.judge(bfcl_root, irrelevant, right).startswith("called")


def test_unknown_category_is_a_usage_error(bfcl_root):
    from localagent.errors import UsageError

    with pytest.raises(UsageError, match="unknown BFCL categories"):
        bfcl.load_cases(bfcl_root, ["simple_rust"], 2)


def test_nestful_cases_offer_the_gold_functions_with_output_schemas(nestful_root):
    cases = nestful.load_cases(nestful_root, ["glaive", "sgd"], 3)
    assert len(cases) == 6 and {c.source for c in cases} == {"glaive", "sgd"}
    case = cases[0]
    assert all(name != "var_result" for name, _ in case.gold)
    tools = case.openai_tools()
    assert {t["function"]["name"] for t in tools} == {name for name, _ in case.gold}
    assert any(t["function"]["returns"].get("properties") for t in tools)


def test_nestful_metrics():
    gold = [("a", {"x": 1}), ("b", {"y": "$var1.z$"})]
    perfect = nestful.score(gold, [("a", {"x": "1"}), ("b", {"y": "$var1.z$"})])
    assert perfect == nestful.Scores(1.0, 1.0, 1.0, 1.0)
    half = nestful.score(gold, [("a", {"x": 1}), ("b", {"y": 7})])
    assert half.f1_functions == 1.0 and half.f1_arguments == 0.5
    assert half.partial_sequence == 0.5 and half.full_sequence == 0.0
    assert nestful.score(gold, []).f1_functions == 0.0


def test_traceable_outputs_read_back_as_nestful_references():
    tools = [{"type": "function", "function": {"name": "route", "returns": {
        "type": "object", "properties": {"distance": {"type": "number"},
                                         "city": {"type": "string"}}}}}]
    outputs = nestful.TraceableOutputs(tools)
    first = outputs.for_function("route")()
    second = outputs.for_function("route")()
    calls = [("pace", {"d": second["distance"], "c": first["city"], "whole": first,
                       "plain": 3})]
    assert nestful.read_back(calls, outputs) == [
        ("pace", {"d": "$var2.distance$", "c": "$var1.city$", "whole": "$var1$", "plain": 3})]


def test_raw_baseline_reads_tool_call_blocks_and_drops_malformed_ones():
    text = ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
            '<tool_call>\n{"name": "g", "arguments": \n</tool_call>\n'
            '<tool_call>\n{"name": "h", "arguments": "{\\"b\\": 2}"}\n</tool_call>')
    assert read_tool_calls(text) == [("f", {"a": 1}), ("h", {"b": 2})]


def test_plan_external_pairs_every_planner_with_the_raw_baseline(cache):
    runs = plan_external(["bfcl"], ["raw", "tools"], ["m"], [None],
                         bfcl_categories=["simple_python"], per_category=2, cache=cache)
    tools = ("tools", default_techniques("tools").label)
    assert [(r.planner, r.label) for r in runs] == [("raw", "-"), tools, ("raw", "-"), tools]
    assert runs[0].case == runs[1].case  # case-major: one case's runs share their prompt
    assert len({r.key for r in runs}) == 4


def test_plan_external_applies_technique_changes_to_each_planners_default(cache):
    changes = parse_spec("-decline")
    runs = plan_external(["bfcl"], ["raw", "tools"], ["m"], [changes],
                         bfcl_categories=["simple_python"], per_category=1, cache=cache)
    labels = {r.planner: r.label for r in runs}
    assert labels["tools"] == replace(default_techniques("tools"), decline=False).label
    with pytest.raises(UsageError, match="not on in the react planner's default"):
        plan_external(["bfcl"], ["react"], ["m"], [changes], bfcl_categories=["simple_python"],
                      per_category=1, cache=cache)


def test_real_model_bfcl_simple_case_raw_and_tools(small_llm, cache, bfcl_root):
    """One BFCL case on the real default model, both sides, judged by BFCL's checker."""
    case = bfcl.load_cases(bfcl_root, ["simple_python"], 1)[0]
    for planner in ("raw", "tools"):
        tech = None if planner == "raw" else default_techniques(planner)
        record = run_external(ExternalRun("bfcl", case, planner, "qwen", tech), small_llm,
                              cache)
        assert record["crashed"] is None
        assert record["ok"], (planner, record["reason"], record["calls"])
        assert record["calls"][0][0] == "calculate_triangle_area"
        json.dumps(record)  # a record is one JSON line


def test_real_model_tools_default_runs_the_models_own_values(small_llm, cache, bfcl_root):
    """`native` in the 0.5B's tools default (its catalog entry): BFCL's simple_python_150
    asks for the return on investment at "3%". Under the grammar the model writes 3; its
    own free reply writes 0.03, what the function takes (BFCL's answer). Both turns call
    `calculate_roi`, so the free reply's values run (`tool_calling.agreed`)."""
    case = next(c for c in bfcl.load_cases(bfcl_root, ["simple_python"], 0)
                if c.id == "simple_python_150")
    assert "3%" in case.goal
    techniques = default_techniques("tools", small_llm.info.name)
    assert techniques.native
    record = run_external(ExternalRun("bfcl", case, "tools", "qwen", techniques),
                          small_llm, cache)
    assert record["ok"], (record["reason"], record["calls"])
    assert record["usage"]["calls"] >= 3  # the probe, the constrained and the free turn
