"""Drafts from the prompt, verified in one batch (localagent/llm/speculative.py): on the real
default model every planner writes the same greedy text with drafts as without, and the
model really accepts drafted tokens; the limits of a completion hold with drafts."""

from __future__ import annotations

import numpy as np
import pytest

from localagent import grammars as G
from localagent.grammar.samples import demo_tools
from localagent.llm.speculative import lookup

pytest.importorskip("llama_cpp")

# One goal per planner over the bundled examples (README's tour).
GOALS = [
    ("tree", "What is the total of the invoices of A and C?"),
    ("sequential", "Get the invoice amount of company D."),
    ("react", "What is the invoice amount of company B plus 15?"),
    ("tools", "What is 100 EUR in USD?"),
]


def test_lookup_continues_the_latest_occurrence_of_the_longest_ngram() -> None:
    ids = np.asarray([1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 2, 3], dtype=np.intc)
    assert lookup(ids, 3, 2) == [7, 8]  # "2 3" last seen before "7 8"
    assert lookup(np.asarray([4, 5, 6], dtype=np.intc), 3, 4) == []
    assert lookup(np.asarray([5, 6, 5], dtype=np.intc), 3, 4) == [6, 5]


@pytest.fixture(scope="module")
def default_llm():
    from localagent.llm import load_llm

    model = load_llm(None, n_threads=2)
    model.set_prompt_cache(None)
    yield model
    model.close()


@pytest.fixture(scope="module")
def agent(default_llm):
    """One Agent over the bundled examples, its model calls recorded."""
    from localagent.agent import Agent
    from localagent.llm.recording import RecordingLLM

    recording = RecordingLLM(default_llm)
    return recording, Agent(recording, examples=True)


def _outputs(agent, planner: str, goal: str, drafts: bool) -> tuple[list[str], object]:
    """The model's outputs and the answer of one run. The KV cache is kept: the second
    run reuses the prompt the first evaluated (a cold tools prompt costs ~40 s here), and
    a drafted call's cache is checked against a cold one below."""
    recording, runner = agent
    recording.inner.drafts = drafts
    recording.take()
    result = runner.run(goal, planner=planner)
    return [e.output for e in recording.take()], result.answer


@pytest.mark.parametrize(("planner", "goal"), GOALS)
def test_every_planner_writes_the_same_text_with_drafts(default_llm, agent, planner,
                                                        goal) -> None:
    plain, plain_answer = _outputs(agent, planner, goal, drafts=False)
    default_llm.draft_stats.clear()
    drafted, answer = _outputs(agent, planner, goal, drafts=True)
    assert drafted == plain
    assert answer == plain_answer
    stats = default_llm.draft_stats
    assert stats, "no call drafted"
    assert sum(s.accepted for s in stats) > 0
    assert sum(s.accepted for s in stats) <= sum(s.drafted for s in stats)


def test_a_drafted_call_leaves_the_cache_as_a_cold_one_would(default_llm) -> None:
    """Rejected drafts' KV cells are dropped: a call that reuses the prefix a drafted call
    left writes what it writes from an empty cache."""
    tools = demo_tools()
    prompt = default_llm.format_chat([{"role": "user", "content": GOALS[0][1] + "\n"
                                       + G.format_instructions("tree", tools)}])
    default_llm.drafts = True
    default_llm.reset_cache()
    first = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=200)
    again = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=200)
    default_llm.reset_cache()
    cold = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=200)
    assert first.text == again.text == cold.text
    G.parse_tree(G.ensure_complete(cold), tools)


def test_limits_hold_with_drafts(default_llm) -> None:
    tools = demo_tools()
    prompt = default_llm.format_chat([{"role": "user", "content": GOALS[0][1] + "\n"
                                       + G.format_instructions("tree", tools)}])
    default_llm.drafts = True
    whole = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=200)
    n = whole.usage.completion_tokens
    for limit in (1, n // 2, n - 1):
        cut = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=limit)
        assert cut.usage.completion_tokens <= limit
        assert cut.truncated and whole.text.startswith(cut.text)
    stopped = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=200,
                                   stop=['"'])
    assert '"' not in stopped.text and whole.text.startswith(stopped.text)


def test_sampled_calls_never_draft(default_llm) -> None:
    tools = demo_tools()
    prompt = default_llm.format_chat([{"role": "user", "content": GOALS[0][1] + "\n"
                                       + G.format_instructions("tree", tools)}])
    default_llm.drafts = True
    default_llm.draft_stats.clear()
    c = default_llm.complete(prompt, constraint=G.tree_plan(tools), max_tokens=200,
                             temperature=0.8, seed=3)
    G.parse_tree(G.ensure_complete(c), tools)
    assert not default_llm.draft_stats
