"""The constraint is really in force on the real default model (DESIGN.md Trap 1).

Each test uses a grammar the model would never follow by itself (it is asked an ordinary
question) and checks that the output obeys it; and that `check_in_force` fails loudly when
the processor never ran or broke inside llama.cpp's callback.
"""

from __future__ import annotations

import re

import pytest

# THREADS_NOTE: one llama.cpp thread. On our shared 2-core machine two spinning threads
# were measured 9x slower than one under load (0.5 vs 4.7 tokens/s for Qwen 0.5B).
from localagent import grammars as G
from localagent.constraint import Constraint
from localagent.errors import ConstraintError, PlanValidationError, TruncatedOutputError
from localagent.grammar.samples import demo_tools
from localagent.llm.constrained import compile_stats, processor_for

llama_cpp = pytest.importorskip("llama_cpp")

MODEL = "qwen2.5-coder-0.5b-instruct"
QUESTION = "What is the capital of France? Answer in one sentence."


@pytest.fixture(scope="module")
def llm():
    from localagent.llm import load_llm

    model = load_llm(MODEL, n_threads=1)  # see THREADS_NOTE
    yield model
    model.close()


def _generate(llm, constraint: Constraint | None, *, max_tokens: int = 24,
              pass_processor: bool = True, break_it: bool = False):
    """Bare llama.cpp generation with our processor, as the backend does it."""
    llama = llm._llama
    prompt = llm.tokenize(llm.format_chat([{"role": "user", "content": QUESTION}]))
    proc = processor_for(constraint, llama) if constraint else None
    kwargs = {}
    if proc is not None:
        proc.reset()
        if break_it:
            proc._matcher = None  # any use of the matcher now raises inside the callback
        if pass_processor:
            kwargs["logits_processor"] = llama_cpp.LogitsProcessorList([proc])
    out = llama.create_completion(prompt, max_tokens=max_tokens, temperature=0.0, **kwargs)
    return out["choices"][0]["text"], int(out["usage"]["completion_tokens"]), proc


def test_unconstrained_model_does_not_write_zq(llm) -> None:
    text, _, _ = _generate(llm, None)
    assert "Paris" in text and not re.fullmatch(r"(zq)+", text)


def test_regex_constraint_forces_zq(llm) -> None:
    constraint = Constraint("regex", r"(zq){2,6}", name="zq")
    text, n, proc = _generate(llm, constraint)
    assert re.fullmatch(r"(zq){2,6}", text), text
    proc.check_in_force(n)
    assert proc.calls >= n and proc.accepting


def test_lark_constraint_forces_a_digits_only_answer(llm) -> None:
    constraint = Constraint("lark", 'start: "Answer: " /[0-9]{1,4}/', name="digits")
    completion = llm.complete(
        llm.format_chat([{"role": "user", "content": QUESTION}]),
        max_tokens=16, constraint=constraint)
    assert re.fullmatch(r"Answer: [0-9]{1,4}", completion.text), completion.text


def test_check_in_force_raises_when_the_processor_never_ran(llm) -> None:
    _, n, proc = _generate(llm, Constraint("regex", r"(zq)+"), pass_processor=False)
    assert n > 0 and proc.calls == 0
    with pytest.raises(ConstraintError, match="not in force"):
        proc.check_in_force(n)


def test_check_in_force_raises_when_the_processor_broke(llm) -> None:
    _, n, proc = _generate(llm, Constraint("regex", r"(zq)+"), break_it=True)
    assert proc.calls >= 1 and proc.error is not None
    assert n <= 1  # the broken processor lets only EOS through: no unconstrained text
    with pytest.raises(ConstraintError, match="failed inside the logits processor"):
        proc.check_in_force(n)


def test_processor_is_compiled_once_and_keeps_working_after_reset(llm) -> None:
    constraint = Constraint("regex", r"(ab){1,3}", name="ab")
    processor_for(constraint, llm._llama)
    before = compile_stats()
    for _ in range(2):
        text, n, proc = _generate(llm, constraint)
        assert re.fullmatch(r"(ab){1,3}", text), text
        proc.check_in_force(n)
    after = compile_stats()
    assert after.grammar_compilations == before.grammar_compilations
    assert after.tokenizer_builds == before.tokenizer_builds


def test_prompt_cache_is_kept_across_constrained_calls(llm) -> None:
    constraint = G.react_step(demo_tools(), final_only=True, allowed_finals=["Paris", "Lyon"])
    prompt = llm.format_chat([{"role": "user", "content": QUESTION}])
    first = llm.complete(prompt, max_tokens=120, constraint=constraint)
    second = llm.complete(prompt + first.text + "\nObservation: ok\n", max_tokens=120,
                          constraint=constraint)
    assert second.usage.prompt_tokens_reused >= first.usage.prompt_tokens - 1
    for c in (first, second):
        assert G.parse_react(G.ensure_complete(c), demo_tools()).final_answer in {"Paris", "Lyon"}


def test_tiny_max_tokens_is_detected_as_truncation(llm) -> None:
    tools = demo_tools()
    prompt = llm.format_chat([{"role": "user", "content": "Add the invoices of Acme and "
                                                          "Globex.\n" + G.format_instructions(
                                                              "tree", tools)}])
    completion = llm.complete(prompt, max_tokens=8, constraint=G.tree_plan(tools))
    assert completion.truncated
    with pytest.raises(TruncatedOutputError):
        G.ensure_complete(completion)
    with pytest.raises(PlanValidationError):
        G.parse_tree(completion.text, tools)
