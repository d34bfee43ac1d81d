"""Prompt-lookup decoding (`localagent/llm/prompt_lookup.py`): drafts from the prompt, and on
the real default model the same greedy text as llama.cpp's own loop with most copied
tokens verified in batches."""

from __future__ import annotations

import pytest

from localagent.llm.prompt_lookup import draft

GOALS = ("What is the total of the invoices of A and C?",
         "Wie hoch ist die Rechnung der Firma D?",
         "Glass Harbour这本书是谁写的？")


def test_a_draft_continues_the_latest_occurrence_of_the_tail() -> None:
    tokens = [1, 2, 3, 4, 9, 2, 3, 5, 6, 7, 8, 2, 3]
    assert draft(tokens, size=3) == [5, 6, 7]  # the later "2 3", not the first
    assert draft(tokens, size=10) == [5, 6, 7, 8, 2, 3]
    assert draft([1, 2, 3, 4, 3]) == []  # "4 3" occurs nowhere before
    assert draft([7, 7]) == []


@pytest.fixture(scope="module")
def llm():
    pytest.importorskip("llama_cpp")
    from localagent.llm import load_llm

    model = load_llm("qwen2.5-coder-0.5b-instruct", n_threads=1)
    model.set_prompt_cache(None)
    yield model
    model.close()


@pytest.mark.parametrize("goal", GOALS)
def test_the_translation_is_the_same_text_with_copied_tokens_batched(llm, goal: str) -> None:
    from localagent.llm.prompt_lookup import generate
    from localagent.retrieval.translation import MAX_TOKENS, translation_messages

    prompt = llm.format_chat(translation_messages(goal))
    llm.reset_cache()
    plain = llm.complete(prompt, max_tokens=MAX_TOKENS, stop=["\n"], temperature=0.0)
    llm.reset_cache()
    looked = llm.complete(prompt, max_tokens=MAX_TOKENS, stop=["\n"], temperature=0.0,
                          lookup=True)
    assert (looked.text, looked.finish_reason) == (plain.text, plain.finish_reason)
    assert looked.usage.completion_tokens == plain.usage.completion_tokens
    if goal == GOALS[0]:  # an English goal comes back word for word: drafts accepted
        llm.reset_cache()
        out = generate(llm.llama, llm.tokenize(prompt), max_tokens=MAX_TOKENS, stop=["\n"])
        assert out.text.strip() == goal
        assert out.forced >= out.tokens // 2


def test_max_tokens_cuts_a_draft(llm) -> None:
    from localagent.retrieval.translation import translation_messages

    prompt = llm.format_chat(translation_messages(GOALS[0]))
    llm.reset_cache()
    out = llm.complete(prompt, max_tokens=5, stop=["\n"], temperature=0.0, lookup=True)
    assert (out.finish_reason, out.usage.completion_tokens) == ("length", 5)
    assert GOALS[0].startswith(out.text.strip())
