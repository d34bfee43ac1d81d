"""Fast-forward of grammar-forced tokens (localagent/llm/fast_forward.py), on the real
default model: the same greedy text as token-by-token sampling, forced tokens counted and
evaluated without sampling, and the limits of a completion (max_tokens, stop strings)
kept."""

from __future__ import annotations

import re

import pytest

from localagent import grammars as G
from localagent.constraint import Constraint
from localagent.grammar.samples import demo_tools
from localagent.llm.constrained import processor_for

pytest.importorskip("llama_cpp")

GOAL = "Add the invoices of Acme and Globex."


@pytest.fixture(scope="module")
def llm():
    from localagent.llm import load_llm

    model = load_llm("qwen2.5-coder-0.5b-instruct", n_threads=1)
    model.set_prompt_cache(None)  # every completion here starts from llama.cpp's own state
    model.drafts = False  # fast-forward alone (drafting: test_speculative.py)
    yield model
    model.close()


def _prompt(llm, text: str) -> str:
    return llm.format_chat([{"role": "user", "content": text}])


def _both(llm, prompt: str, constraint: Constraint, **kwargs):
    """The completion token by token, then with fast-forward, each from a cold cache."""
    out = []
    for ff in (False, True):
        llm.fast_forward = ff
        llm.reset_cache()
        out.append(llm.complete(prompt, constraint=constraint, **kwargs))
    llm.fast_forward = True
    return out


def test_tree_plan_is_the_same_text_with_fewer_samples(llm) -> None:
    tools = demo_tools()
    prompt = _prompt(llm, GOAL + "\n" + G.format_instructions("tree", tools))
    stepwise, forwarded = _both(llm, prompt, G.tree_plan(tools), max_tokens=200)
    assert forwarded.text == stepwise.text
    assert forwarded.usage.completion_tokens == stepwise.usage.completion_tokens
    G.parse_tree(G.ensure_complete(forwarded), tools)


def test_forced_tokens_are_fed_without_masking_each_one(llm) -> None:
    constraint = Constraint("regex", r"The answer is (yes|no)\. Reason: [a-z ]{1,40}\.",
                            name="forced-prefix")
    processor = processor_for(constraint, llm.llama)
    processor.reset()
    from localagent.llm.fast_forward import generate

    llm.reset_cache()
    out = generate(llm.llama, llm.tokenize(_prompt(llm, "Is water wet?")), processor,
                   max_tokens=40, temperature=0.0, seed=0)
    assert re.fullmatch(r"The answer is (yes|no)\. Reason: [a-z ]{1,40}\.", out.text), out.text
    assert out.forced >= 4  # "answer is", ". Reason:" have no alternative
    assert processor.calls + processor.forced >= out.tokens > processor.calls
    processor.check_in_force(out.tokens)


def test_max_tokens_is_kept_and_seen_as_truncation(llm) -> None:
    tools = demo_tools()
    prompt = _prompt(llm, GOAL + "\n" + G.format_instructions("tree", tools))
    llm.reset_cache()
    completion = llm.complete(prompt, max_tokens=8, constraint=G.tree_plan(tools))
    assert completion.usage.completion_tokens <= 8
    assert completion.truncated


@pytest.fixture(scope="module")
def smollm2():
    from localagent.llm import load_llm

    model = load_llm("smollm2-135m-instruct", n_threads=1)
    model.set_prompt_cache(None)
    model.fast_forward = True
    model.drafts = False
    yield model
    model.close()


def test_every_limit_below_the_plan_length_is_a_truncation(smollm2) -> None:
    # At the step limit the plan's closing brackets are forced (SmolLM2's vocabulary writes
    # them one token each); a max_tokens that cut that run used to end "stop" (the matcher
    # had reached the grammar's end) with the text cut short, so it failed to parse
    # instead of being retried with a larger budget.
    tools = demo_tools()
    constraint = G.sequential_plan(tools, max_steps=1)
    prompt = _prompt(smollm2, GOAL + "\n" + G.format_instructions("sequential", tools))
    smollm2.reset_cache()
    whole = smollm2.complete(prompt, max_tokens=300, constraint=constraint)
    n = whole.usage.completion_tokens
    assert not whole.truncated and G.parse_sequential(whole.text, tools, max_steps=1)
    for limit in range(max(1, n - 6), n):
        smollm2.reset_cache()
        cut = smollm2.complete(prompt, max_tokens=limit, constraint=constraint)
        assert cut.usage.completion_tokens <= limit
        assert cut.truncated, (limit, cut.text[-40:])


def test_a_stop_string_ends_a_constrained_completion(llm) -> None:
    constraint = Constraint("regex", r"Thought: [a-z ]{1,30}\nAction: (add|stop)\n",
                            name="react-like")
    prompt = _prompt(llm, "Say what you would do next.")
    stepwise, forwarded = _both(llm, prompt, constraint, max_tokens=40, stop=["\nAction"])
    assert forwarded.text == stepwise.text
    assert "Action" not in forwarded.text and forwarded.text.startswith("Thought: ")


def test_sampling_with_a_seed_repeats_and_stays_in_the_grammar(llm) -> None:
    tools = demo_tools()
    prompt = _prompt(llm, GOAL + "\n" + G.format_instructions("tree", tools))
    texts = []
    for _ in range(2):
        llm.reset_cache()
        c = llm.complete(prompt, max_tokens=200, constraint=G.tree_plan(tools),
                         temperature=0.9, seed=7)
        G.parse_tree(G.ensure_complete(c), tools)
        texts.append(c.text)
    assert texts[0] == texts[1]


@pytest.mark.parametrize(("value", "expected"), [("0", False), ("1", True), ("auto", None)])
def test_the_setting_turns_it_on_and_off(monkeypatch, value: str, expected) -> None:
    from localagent.llm import load_llm

    monkeypatch.setenv("LOCALAGENT_FAST_FORWARD", value)
    model = load_llm("qwen2.5-coder-0.5b-instruct", n_threads=1)
    try:
        assert model.fast_forward is expected
    finally:
        model.close()


def test_auto_batches_only_under_constraints_marked_for_it(llm) -> None:
    """The default (auto): greedy calls under the plan planners' grammars are fast-forwarded;
    the loops' grammars and sampled calls are not."""
    from dataclasses import replace

    from localagent.planners.sequential import SequentialPlanner
    from localagent.planners.tree import TreePlanner

    tools = demo_tools()
    assert TreePlanner(llm, tools).constraint().fast_forward
    assert SequentialPlanner(llm, tools).constraint().fast_forward
    assert not G.react_step(tools).fast_forward
    prompt = _prompt(llm, GOAL + "\n" + G.format_instructions("tree", tools))
    plain = G.tree_plan(tools)
    llm.fast_forward = None
    try:
        batches = []
        marked = replace(plain, fast_forward=True)
        for constraint, temperature in ((plain, 0.0), (marked, 0.0), (marked, 0.9)):
            llm.reset_cache()
            out = llm.complete(prompt, constraint=constraint, max_tokens=200,
                               temperature=temperature, seed=7)
            batches.append(max(llm._eval_sizes[1:]))  # after the prompt's own batch
        assert batches[0] == 1 < batches[1]
        assert batches[2] == 1  # a sampled call keeps its draws: token by token
        assert out.text  # the same plan either way: test_tree_plan_is_the_same_text...
    finally:
        llm.fast_forward = True
