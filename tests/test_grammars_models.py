"""Every format, on every installed catalog model: constrained outputs all parse and validate.

Ten varied goals per format and model (the benchmark runs fifty). The grammar forces the
form, so the bar is 100%: a single invalid or truncated output fails the test and names
the goal. Sense (did the model pick the right functions?) is the planners' business.
"""

from __future__ import annotations

import pytest

# THREADS_NOTE: one llama.cpp thread. On our shared 2-core machine two spinning threads
# were measured 9x slower than one under load (0.5 vs 4.7 tokens/s for Qwen 0.5B).
from localagent import grammars as G
from localagent.errors import LocalAgentError, WeightsPackageMissingError
from localagent.grammar.samples import demo_tools, goals, prompt_for

pytest.importorskip("llama_cpp")

MODELS = ["qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct", "gemma-3-270m"]
N_GOALS = 10
TOOLS = demo_tools()
BUILD = {"sequential": lambda: G.sequential_plan(TOOLS),
         "tree": lambda: G.tree_plan(TOOLS),
         "react": lambda: G.react_step(TOOLS),
         "tool_call": lambda: G.tool_call_turn(TOOLS)}
PARSE = {"sequential": G.parse_sequential, "tree": G.parse_tree, "react": G.parse_react,
         "tool_call": G.parse_tool_calls}
MAX_TOKENS = {"sequential": 220, "tree": 220, "react": 160, "tool_call": 180}


@pytest.fixture(scope="module", params=MODELS)
def llm(request):
    from localagent.llm import load_llm

    try:
        model = load_llm(request.param, n_threads=1)  # see THREADS_NOTE
    except WeightsPackageMissingError:
        pytest.skip(f"{request.param}: weights package not installed")
    yield model
    model.close()


@pytest.mark.parametrize("fmt", list(G.FORMATS))
def test_constrained_outputs_parse_and_validate(llm, fmt: str, request) -> None:
    if llm.info.name == "gemma-3-270m" and fmt in ("sequential", "tool_call"):
        request.applymarker(pytest.mark.xfail(strict=False, reason=(
            "measured 2026-11-30: gemma-3-270m (a base model) loops inside the bounds until "
            "max_tokens on 5/10 sequential and 7/10 tool_call goals; every truncation is "
            "detected and none is returned as valid")))
    constraint = BUILD[fmt]()
    instructions = G.format_instructions(fmt, TOOLS)
    failures = []
    for goal in goals(N_GOALS):
        completion = llm.complete(prompt_for(llm, instructions, goal),
                                  max_tokens=MAX_TOKENS[fmt], constraint=constraint)
        try:
            PARSE[fmt](G.ensure_complete(completion), TOOLS)
        except LocalAgentError as exc:
            failures.append(f"{goal!r} -> {completion.text[-80:]!r}: {exc}")
    assert not failures, f"{llm.info.name} {fmt}: {len(failures)}/{N_GOALS} invalid:\n" + \
        "\n".join(failures)
