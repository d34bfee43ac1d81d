"""The disk prompt cache (localagent/llm/prompt_cache.py).

Unit tests on small fake states: which prefixes are loaded and saved, the entry format's
checks (corrupt, foreign), LRU eviction under the size cap. Real-model tests: two separate
processes planning the same goal (the second evaluates at most 20% of the prompt tokens
the first did, and plans the same), and a corrupt or foreign entry ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from localagent.llm.prompt_cache import (
    _FIXED,
    MIN_GAIN,
    MIN_PREFIX,
    CacheIdentity,
    Entry,
    PromptCache,
    common_prefix,
    plan_use,
)

REPO = Path(__file__).resolve().parent.parent
IDENTITY = CacheIdentity(model_sha256="a" * 64, build="test build", context="n_ctx=64")
GOAL = "What is the total of the invoices of A and C?"


def entry(tokens: list[int]) -> Entry:
    return Entry(path=Path(f"/nowhere/{len(tokens)}"), tokens=tuple(tokens), size=1, used=0.0)


# --- which prefix is loaded and saved -----------------------------------------------


def test_a_prompt_with_nothing_on_disk_is_saved_whole() -> None:
    prefix = list(range(1000))
    plan = plan_use(prefix, 0, [])
    assert plan.load is None and plan.start == 0 and plan.checkpoints == (1000,)


def test_a_stored_prompt_is_loaded_and_nothing_saved_again() -> None:
    prefix = list(range(1000))
    plan = plan_use(prefix, 0, [entry(prefix)])
    assert plan.load is not None and plan.start == 1000 and plan.checkpoints == ()


def test_the_part_two_prompts_share_becomes_an_entry_of_its_own() -> None:
    shared = list(range(700))
    first, second = shared + [1] * 300, shared + [2] * 40
    plan = plan_use(second, 0, [entry(first)])
    assert plan.load is not None and plan.start == 700
    assert plan.checkpoints == (700,)  # the 40-token tail is below MIN_GAIN: not saved
    # once the shared part is stored, a third goal loads it and saves nothing
    third = shared + [3] * 30
    again = plan_use(third, 0, [entry(first), entry(shared)])
    assert again.start == 700 and again.checkpoints == ()
    assert again.load is not None and len(again.load.tokens) == 700  # the smaller file


def test_a_long_new_tail_is_saved_too() -> None:
    shared = list(range(500))
    plan = plan_use(shared + [2] * (MIN_GAIN + 10), 0, [entry(shared + [1] * 300)])
    assert plan.checkpoints == (500, 500 + MIN_GAIN + 10)


def test_memory_that_holds_more_wins_over_the_disk() -> None:
    prefix = list(range(1000))
    plan = plan_use(prefix, 990, [entry(prefix[:800] + [7] * 100)])
    assert plan.load is None and plan.start == 990
    # the shared 800 are not saved (that would truncate memory); the whole prompt is,
    # since the disk lacks 200 of its tokens
    assert plan.checkpoints == (1000,)


def test_short_prompts_never_touch_the_disk() -> None:
    prefix = list(range(MIN_PREFIX - 1))
    assert plan_use(prefix, 0, [entry(prefix)]) == plan_use(prefix, 0, []) \
        and plan_use(prefix, 0, []).checkpoints == ()


# --- the entry format ------------------------------------------------------------------


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, IDENTITY)
    path = cache.save([5, 6, 7], b"state bytes")
    assert path is not None and path.parent == tmp_path / IDENTITY.folder
    [stored] = cache.entries()
    assert stored.tokens == (5, 6, 7) and cache.load(stored) == b"state bytes"


def test_a_corrupt_payload_is_ignored_and_deleted(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, IDENTITY)
    path = cache.save([5, 6, 7], b"state bytes")
    assert path is not None
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    [stored] = cache.entries()  # the header still reads well
    assert cache.load(stored) is None and not path.exists()


@pytest.mark.parametrize("damage", ["truncated", "magic", "empty"])
def test_a_malformed_file_is_deleted_on_listing(tmp_path: Path, damage: str) -> None:
    cache = PromptCache(tmp_path, IDENTITY)
    path = cache.save(list(range(40)), b"x" * 100)
    assert path is not None
    data = path.read_bytes()
    path.write_bytes({"truncated": data[:_FIXED.size + 20], "magic": b"GGUF" + data[4:],
                      "empty": b""}[damage])
    assert cache.entries() == [] and not path.exists()


def test_a_foreign_entry_is_deleted(tmp_path: Path) -> None:
    other = CacheIdentity(model_sha256="b" * 64, build=IDENTITY.build, context=IDENTITY.context)
    written = PromptCache(tmp_path, other).save([5, 6, 7], b"their state")
    assert written is not None
    ours = PromptCache(tmp_path, IDENTITY)
    ours.folder.mkdir(parents=True)
    planted = ours.folder / written.name
    written.rename(planted)  # a file of another model where ours are looked up
    assert ours.entries() == [] and not planted.exists()


def test_the_cap_evicts_the_least_recently_used(tmp_path: Path) -> None:
    probe = PromptCache(tmp_path / "probe", IDENTITY).save([1], b"x" * 1000)
    assert probe is not None
    one = probe.stat().st_size  # one entry's bytes on disk (same token count below)
    cache = PromptCache(tmp_path / "cache", IDENTITY, cap_bytes=2 * one + one // 2)
    a, b = cache.save([1], b"a" * 1000), cache.save([2], b"b" * 1000)
    assert a is not None and b is not None
    os.utime(a, (1000, 1000))
    os.utime(b, (2000, 2000))  # a is older than b...
    [ea] = [e for e in cache.entries() if e.path == a]
    assert cache.load(ea) == b"a" * 1000  # ...until it is used
    c = cache.save([3], b"c" * 1000)
    assert c is not None and a.exists() and c.exists() and not b.exists()
    assert cache.size() <= cache.cap_bytes


def test_an_entry_larger_than_the_cap_is_not_saved(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, IDENTITY, cap_bytes=100)
    assert cache.save([1, 2], b"z" * 200) is None and cache.entries() == []


# --- real model ------------------------------------------------------------------------

PLAN_SCRIPT = """
import json, sys
from localagent.llm import load_llm
from localagent.planners.base import MeteredLLM
from localagent.planners.tree import TreePlanner
from localagent.tools.examples.demo import DemoPlugin
from localagent.tools.registry import ToolRegistry

registry = ToolRegistry(None)
registry.add_plugin(DemoPlugin)
llm = MeteredLLM(load_llm("qwen2.5-coder-0.5b-instruct", n_threads=1))
planned = TreePlanner(llm, registry.specs()).plan(sys.argv[1])
print(json.dumps({"usage": llm.usage.to_dict(), "plan": planned.plan.to_json()}))
"""


def plan_in_new_process(home: Path, goal: str) -> dict[str, object]:
    env = {**os.environ, "LOCALAGENT_HOME": str(home), "LOCALAGENT_PROMPT_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", PLAN_SCRIPT, goal], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_evaluates_only_what_the_disk_lacks(
        tmp_path: Path, small_model_path: Path) -> None:
    first = plan_in_new_process(tmp_path, GOAL)
    second = plan_in_new_process(tmp_path, GOAL)
    u1, u2 = first["usage"], second["usage"]
    assert isinstance(u1, dict) and isinstance(u2, dict)
    assert u1["prompt_tokens_loaded"] == 0 and u1["prompt_tokens"] >= MIN_PREFIX
    assert u1["prompt_tokens_evaluated"] == u1["prompt_tokens"]  # a cold process
    assert u2["prompt_tokens_loaded"] > 0
    assert u2["prompt_tokens_evaluated"] <= 0.2 * u1["prompt_tokens_evaluated"]
    assert second["plan"] == first["plan"]
    assert list((tmp_path / "prompt_cache").glob("*/*.kv"))


PROMPT = "Facts, one a line.\n" + "".join(
    f"Item {i}: the code of item {i} is {i * 7919 % 1000}.\n" for i in range(18)) + \
    "Question: what is the code of item 3?\nAnswer: the code of item 3 is"


def rewrite_header(path: Path, **changes: str) -> None:
    """Change header fields and re-sign the file: a well-formed entry of another identity."""
    data = path.read_bytes()
    magic, version, header_len, _ = _FIXED.unpack_from(data)
    body = data[_FIXED.size:]
    header = json.dumps({**json.loads(body[:header_len]), **changes}, sort_keys=True).encode()
    body = header + body[header_len:]
    path.write_bytes(_FIXED.pack(magic, version, len(header), hashlib.sha256(body).digest())
                     + body)


def damage_entry(path: Path, damage: str) -> None:
    if damage == "corrupt":  # a flipped byte inside the KV state: the checksum fails
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:  # well formed and signed, but another model's
        rewrite_header(path, model_sha256="0" * 64)


def test_a_corrupt_or_foreign_entry_is_ignored_and_rebuilt(small_llm, tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, small_llm.cache_identity())
    small_llm.set_prompt_cache(cache)
    try:
        small_llm.reset_cache(keep_disk=True)  # memory empty, and so is the disk
        fresh = small_llm.complete(PROMPT, max_tokens=4)
        n = fresh.usage.prompt_tokens
        assert n > MIN_PREFIX and fresh.usage.prompt_tokens_evaluated == n
        [stored] = cache.entries()
        assert len(stored.tokens) == n - 1
        for damage in ("corrupt", "foreign"):
            damage_entry(stored.path, damage)
            small_llm.reset_cache(keep_disk=True)  # as a new process would start
            ignored = small_llm.complete(PROMPT, max_tokens=4)
            assert ignored.usage.prompt_tokens_loaded == 0, damage
            assert ignored.usage.prompt_tokens_evaluated == n, damage
            [rebuilt] = cache.entries()
            assert rebuilt.tokens == stored.tokens and cache.load(rebuilt) is not None
            small_llm.reset_cache(keep_disk=True)
            restored = small_llm.complete(PROMPT, max_tokens=4)
            assert restored.usage.prompt_tokens_loaded == n - 1, damage
            assert restored.usage.prompt_tokens_evaluated == 1, damage
            assert restored.text == ignored.text == fresh.text, damage
    finally:
        small_llm.set_prompt_cache(None)
        small_llm.reset_cache()


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([], [1]) == 0
    assert struct.calcsize("<8sII32s") == _FIXED.size


def test_the_settings_turn_the_cache_on_and_off(small_model_path: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from localagent.llm.llama import LlamaCppLLM

    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path))
    monkeypatch.setenv("LOCALAGENT_PROMPT_CACHE", "0")
    off = LlamaCppLLM(small_model_path, n_ctx=512, n_threads=1)
    try:
        assert off.prompt_cache is None
    finally:
        off.close()
    monkeypatch.setenv("LOCALAGENT_PROMPT_CACHE", "1")
    monkeypatch.setenv("LOCALAGENT_PROMPT_CACHE_BYTES", "12345")
    on = LlamaCppLLM(small_model_path, n_ctx=512, n_threads=1)
    try:
        cache = on.prompt_cache
        assert cache is not None and cache.cap_bytes == 12345
        assert cache.root == tmp_path / "prompt_cache"
        # a path outside the catalog: its sha256 is computed once and remembered
        digest = hashlib.sha256(small_model_path.read_bytes()).hexdigest()
        assert cache.identity.model_sha256 == digest
        assert digest in (tmp_path / "prompt_cache" / "model_sha256.json").read_text()
    finally:
        on.close()
