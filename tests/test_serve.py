"""`localagent serve`: the wire format, the server over a scripted model, and the real thing.

The real tests start `localagent serve` with the default GGUF on a free loopback port, poll
`/health` until it is ready and always stop it; `localagent run --model URL#NAME` against
it must give the same plan, raw outputs and answer as the local run (greedy), and a
request under a grammar the model would never follow on its own must follow it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import REPO, SMALL_MODEL, run_cli, stop_process

from localagent.constraint import Constraint
from localagent.errors import UsageError
from localagent.llm.constrained import matches
from localagent.llm.remote import RemoteLLM, parse_source
from localagent.llm.scripted import ScriptedLLM, ScriptedRequest
from localagent.server import BadRequest, ModelServer
from localagent.server.protocol import chat_request, completion_request

KEY = "test-key-123"
GOAL = "What is the total of the invoices of A and C?"


# --- the wire format ----------------------------------------------------------------------


def test_structured_outputs_grammar_becomes_a_lark_constraint() -> None:
    request = completion_request({"model": "m", "prompt": ["Q"], "max_tokens": 4,
                                  "stop": "\n", "temperature": 0, "seed": 3,
                                  "structured_outputs": {"grammar": 'start: "a"'}})
    assert request.constraint == Constraint(kind="lark", source='start: "a"',
                                            name="request-grammar")
    assert (request.prompt, request.max_tokens, request.stop, request.seed) == ("Q", 4,
                                                                                ("\n",), 3)
    schema = completion_request({"prompt": "Q", "structured_outputs": {"json": {"type": "integer"}}})
    assert schema.constraint is not None and schema.constraint.kind == "json_schema"
    assert completion_request({"prompt": "Q"}).constraint is None


def test_openai_response_format_becomes_a_json_constraint() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    request = chat_request({"messages": [{"role": "user", "content": "hi"}], "response_format": {
        "type": "json_schema", "json_schema": {"name": "n", "schema": schema, "strict": True}}})
    assert request.constraint == Constraint(kind="json_schema", source=json.dumps(schema),
                                            name="request-json")
    assert matches(request.constraint, '{"n": 3}') and not matches(request.constraint, "3")
    anything = completion_request({"prompt": "Q", "response_format": {"type": "json_object"}})
    assert anything.constraint is not None and matches(anything.constraint, '{"a": [1]}')
    assert completion_request({"prompt": "Q", "response_format": {"type": "text"}}).constraint is None


@pytest.mark.parametrize("body", [
    {"prompt": "Q", "response_format": {"type": "xml"}},
    {"prompt": "Q", "response_format": {"type": "json_schema"}},
    {"prompt": "Q", "response_format": {"type": "json_object"},
     "structured_outputs": {"regex": "a"}},
    {"prompt": 3},
    {"prompt": ["a", "b"]},
    {"prompt": "Q", "max_tokens": 0},
    {"prompt": "Q", "stream": True},
    {"prompt": "Q", "structured_outputs": {"grammar": "start: \"a\"", "regex": "a"}},
    {"prompt": "Q", "structured_outputs": {"choice": ["a"]}},
    {"prompt": "Q", "temperature": -1},
    [1, 2],
])
def test_bad_bodies_are_bad_requests(body: Any) -> None:
    with pytest.raises(BadRequest):
        completion_request(body)


def test_chat_bodies_need_messages() -> None:
    with pytest.raises(BadRequest):
        chat_request({"messages": []})
    request = chat_request({"messages": [{"role": "user", "content": "hi"}],
                            "tools": [{"type": "function"}]})
    assert request.messages and request.tools == ({"type": "function"},)


# --- the server over a scripted model -------------------------------------------------------


class _Overlap:
    """A responder that records how many generations run at once."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, request: ScriptedRequest) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.05)  # give another request the chance to overlap, if it could
        with self.lock:
            self.now -= 1
        return request.prompt.upper()


@pytest.fixture()
def scripted_server() -> Iterator[tuple[ModelServer, _Overlap]]:
    overlap = _Overlap()
    llm = ScriptedLLM(responder=overlap, name="scripted")
    with ModelServer(llm, port=0, api_key=KEY) as server:
        yield server, overlap


def _auth(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_api_key_is_required_except_for_health(scripted_server: Any) -> None:
    server, _ = scripted_server
    url = server.base_url
    assert httpx.get(url.removesuffix("/v1") + "/health").status_code == 200
    denied = httpx.post(f"{url}/completions", json={"prompt": "a"}, headers=_auth("wrong"))
    assert denied.status_code == 401 and denied.json()["error"]["type"] == "authentication_error"
    assert httpx.get(f"{url}/models").status_code == 401
    listing = httpx.get(f"{url}/models", headers=_auth()).json()
    assert [m["id"] for m in listing["data"]] == ["scripted"]
    with pytest.raises(UsageError, match="refused the API key") as info:
        RemoteLLM(parse_source(f"{url}#scripted", env={"LOCALAGENT_API_KEY": "wrong"}))
    assert info.value.exit_code == 2


def test_unknown_model_route_and_bad_body_get_openai_errors(scripted_server: Any) -> None:
    server, _ = scripted_server
    url = server.base_url
    other = httpx.post(f"{url}/completions", json={"model": "x", "prompt": "a"}, headers=_auth())
    assert other.status_code == 404 and "not served" in other.json()["error"]["message"]
    assert httpx.post(f"{url}/nothing", json={}, headers=_auth()).status_code == 404
    bad = httpx.post(f"{url}/completions", content=b"{not json", headers=_auth())
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]


def test_concurrent_requests_wait_their_turn(scripted_server: Any) -> None:
    server, overlap = scripted_server
    texts: list[str] = []

    def ask(i: int) -> None:
        reply = httpx.post(f"{server.base_url}/completions", headers=_auth(), timeout=30,
                           json={"model": "scripted", "prompt": f"req{i}", "max_tokens": 4})
        texts.append(reply.json()["choices"][0]["text"])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(texts) == [f"REQ{i}" for i in range(6)]  # each got its own answer
    assert overlap.most == 1 and server.requests_served == 6


def test_chat_completions_render_with_the_models_template(scripted_server: Any) -> None:
    server, _ = scripted_server
    reply = httpx.post(f"{server.base_url}/chat/completions", headers=_auth(), json={
        "messages": [{"role": "user", "content": "hi"}]}).json()
    assert reply["object"] == "chat.completion"
    assert reply["choices"][0]["message"]["content"] == "<|IM_START|>USER\nHI<|IM_END|>\n" \
                                                        "<|IM_START|>ASSISTANT\n"


def test_serve_refuses_a_server_url_as_its_model() -> None:
    result = run_cli("serve", "--model", "http://127.0.0.1:9/v1#m", timeout=60)
    assert result.returncode == 2 and "needs a local model" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# --- the real `localagent serve` ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    url: str  # .../v1
    process: subprocess.Popen[str]
    local: dict[str, Any]  # the local run of GOAL (--json)


def _run_json(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = run_cli("run", GOAL, "--planner", "tree", "--examples", "--json", *args,
                     env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The local run first (one model-loading process at a time), then the server."""
    local = _run_json()
    port = _free_port()
    log = Path(tmp_path_factory.mktemp("serve")) / "serve.log"
    script = Path(sys.executable).parent / "localagent"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(script), "serve", "--model", SMALL_MODEL, "--port", str(port),
             "--api-key", KEY], stdout=out, stderr=subprocess.STDOUT, text=True, cwd=REPO,
            env={**os.environ})
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"localagent serve did not come up: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield Served(f"http://127.0.0.1:{port}/v1", process, local)
    finally:
        stop_process(process, timeout=30)


def test_real_server_enforces_a_grammar_the_model_would_not_follow(served: Served) -> None:
    grammar = 'start: "zebra-" ("17" | "42") "-quartz"'
    reply = httpx.post(f"{served.url}/chat/completions", headers=_auth(), timeout=120, json={
        "model": SMALL_MODEL, "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 12, "temperature": 0, "structured_outputs": {"grammar": grammar}})
    assert reply.status_code == 200, reply.text
    text = reply.json()["choices"][0]["message"]["content"]
    assert text in ("zebra-17-quartz", "zebra-42-quartz")
    broken = httpx.post(f"{served.url}/completions", headers=_auth(), timeout=60, json={
        "prompt": "x", "structured_outputs": {"grammar": "start: ((("}})
    assert broken.status_code == 400 and broken.json()["error"]["type"] == "constraint_error"
    assert httpx.post(f"{served.url}/completions", json={"prompt": "x"}).status_code == 401


def test_real_server_answers_in_an_openai_response_format(served: Served) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Oslo", "Lima"]},
                                               "rank": {"type": "integer"}},
              "required": ["city", "rank"], "additionalProperties": False}
    reply = httpx.post(f"{served.url}/chat/completions", headers=_auth(), timeout=120, json={
        "model": SMALL_MODEL, "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 40, "temperature": 0, "response_format": {
            "type": "json_schema", "json_schema": {"name": "place", "schema": schema}}})
    assert reply.status_code == 200, reply.text
    data = json.loads(reply.json()["choices"][0]["message"]["content"])
    assert data["city"] in ("Oslo", "Lima") and isinstance(data["rank"], int)
    assert set(data) == {"city", "rank"}


def test_remote_run_gives_the_same_plan_and_answer_as_the_local_run(served: Served) -> None:
    remote = _run_json("--model", f"{served.url}#{SMALL_MODEL}",
                       env={"LOCALAGENT_API_KEY": KEY})
    assert served.local["answer"] is not None and served.local["error"] is None
    for key in ("answer", "plan", "outputs", "model"):
        assert remote[key] == served.local[key], key
    assert remote["usage"]["calls"] == served.local["usage"]["calls"]
