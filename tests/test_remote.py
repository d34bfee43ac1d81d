"""The remote backend (`localagent/llm/remote.py`) without a model.

Engine stubs answer over an httpx `MockTransport` and check every request body against the
fields each engine documents (the sets below, from their API references), so a field in
the wrong place (vLLM's retired `guided_grammar`, `tools` beside a llama-server grammar)
fails here. The canary is refused by a real HTTP server on loopback that returns free text,
through the real CLI (exit 2, one line). The real `localagent serve` is in test_serve.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from conftest import run_cli

from localagent.constraint import Constraint
from localagent.errors import ConstraintError, UsageError
from localagent.llm.remote import (
    CANARY_TEXT,
    RemoteLLM,
    RemoteServerError,
    ServerSpec,
    completion_body,
    lark_text,
    parse_source,
    remote_spec,
)

MODEL = "served-model"
YES_NO = Constraint(kind="lark", source='start: "yes" | "no"', name="yes-no")

# Request fields each engine documents (the ones we may send), per route.
# vLLM: CompletionRequest + StructuredOutputsParams; TokenizeChatRequest, DetokenizeRequest
# (vllm/entrypoints/openai/protocol.py, serve/tokenize/protocol.py).
VLLM = {
    "/v1/completions": {"model", "prompt", "max_tokens", "temperature", "seed", "stop", "n",
                        "top_p", "stream", "structured_outputs"},
    "/tokenize": {"model", "prompt", "messages", "add_generation_prompt", "tools",
                  "add_special_tokens", "continue_final_message", "return_token_strs"},
    "/detokenize": {"model", "tokens"},
}
VLLM_STRUCTURED = {"json", "regex", "choice", "grammar", "json_object", "structural_tag"}
# SGLang: CompletionRequest with its extra constrained-decoding fields `regex`,
# `json_schema`, `ebnf` (sglang/srt/entrypoints/openai/protocol.py); /tokenize.
SGLANG = {
    "/v1/completions": {"model", "prompt", "max_tokens", "temperature", "seed", "stop", "n",
                        "top_p", "stream", "regex", "json_schema", "ebnf"},
    "/tokenize": {"model", "prompt", "add_special_tokens"},
}
# llama-server (tools/server/README.md): /v1/completions takes the native sampling fields
# (`grammar`, `cache_prompt`); /tokenize `content`; /apply-template `messages`.
LLAMA_SERVER = {
    "/v1/completions": {"model", "prompt", "max_tokens", "temperature", "seed", "stop",
                        "grammar", "cache_prompt", "n_predict", "stream"},
    "/tokenize": {"content", "add_special", "parse_special", "with_pieces"},
    "/apply-template": {"messages", "tools", "add_generation_prompt"},
}
FIELDS = {"vllm": VLLM, "sglang": SGLANG, "llama-server": LLAMA_SERVER}


class StubEngine:
    """An enforcing engine of one kind: grammar-free completions come from `outputs`; a
    completion under the canary grammar returns the canary, others `outputs` too."""

    def __init__(self, kind: str, outputs: list[str] | None = None,
                 enforce: bool = True) -> None:
        self.kind, self.outputs, self.enforce = kind, list(outputs or []), enforce
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def grammar(self, body: dict[str, Any]) -> str | None:
        if self.kind == "sglang":
            return body.get("ebnf")
        if self.kind == "llama-server":
            return body.get("grammar")
        return (body.get("structured_outputs") or {}).get("grammar")

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body = json.loads(request.content) if request.content else {}
        self.requests.append((path, body))
        if request.method == "GET" and path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [
                {"id": MODEL, "object": "model", "max_model_len": 2048}]})
        if request.method == "GET" and path == "/props" and self.kind == "llama-server":
            return httpx.Response(200, json={"chat_template": "{{ messages }} tools",
                                             "default_generation_settings": {"n_ctx": 1024}})
        allowed = FIELDS[self.kind].get(path)
        if allowed is None:
            return httpx.Response(404, json={"error": {"message": f"no route {path}"}})
        unknown = set(body) - allowed
        if unknown:  # what a strict engine would reject (vLLM: extra fields are errors)
            return httpx.Response(400, json={"error": {"message": f"unknown {unknown}"}})
        if path == "/v1/completions":
            grammar = self.grammar(body)
            text = (CANARY_TEXT if self.enforce and grammar and CANARY_TEXT in grammar
                    else self.outputs.pop(0))
            return httpx.Response(200, json={
                "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 1,
                          "prompt_tokens_details": {"cached_tokens": 3}}})
        if path == "/tokenize":
            return httpx.Response(200, json={"tokens": [1, 2, 3], "count": 3})
        if path == "/detokenize":
            return httpx.Response(200, json={"prompt": "<rendered by vllm>"})
        return httpx.Response(200, json={"prompt": "<rendered by llama-server>"})

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if p == path]


def _remote(engine: StubEngine, **kwargs: Any) -> RemoteLLM:
    spec = ServerSpec(base_url="http://gpu.test:8000/v1", model=MODEL, kind=engine.kind,
                      api_key="k")  # type: ignore[arg-type]
    return RemoteLLM(spec, transport=httpx.MockTransport(engine), **kwargs)


# --- the --model syntax ---------------------------------------------------------------


def test_url_source_gives_model_kind_and_key_from_env() -> None:
    spec = parse_source("http://10.0.0.5:8000/v1#Qwen/Qwen2.5-7B&kind=vllm",
                        env={"LOCALAGENT_API_KEY": "s3cret"})
    assert (spec.base_url, spec.model, spec.kind, spec.api_key) == (
        "http://10.0.0.5:8000/v1", "Qwen/Qwen2.5-7B", "vllm", "s3cret")
    assert spec.root == "http://10.0.0.5:8000"
    plain = parse_source("http://h:1#m", env={"LOCALAGENT_SERVER_KIND": "sglang"})
    assert (plain.base_url, plain.kind, plain.api_key) == ("http://h:1/v1", "sglang", None)


@pytest.mark.parametrize("source", ["http://h:1/v1", "http://h:1/v1#", "http://h:1/v1#m&kind=tgi",
                                    "http://h:1/v1#m&color=red", "http:///v1#m"])
def test_malformed_url_sources_are_usage_errors(source: str) -> None:
    with pytest.raises(UsageError):
        parse_source(source, env={})


def test_base_url_setting_sends_names_to_the_server_but_keeps_files_local() -> None:
    env = {"LOCALAGENT_BASE_URL": "http://gpu:9000/v1", "LOCALAGENT_SERVER_KIND": "llama-server"}
    spec = remote_spec("some-model", default_model="default-name", env=env)
    assert spec is not None and (spec.model, spec.kind) == ("some-model", "llama-server")
    spec = remote_spec(None, default_model="default-name", env=env)
    assert spec is not None and spec.model == "default-name"
    assert remote_spec("models/x.gguf", default_model="d", env=env) is None
    assert remote_spec("some-model", default_model="d", env={}) is None


# --- request shapes, per engine ---------------------------------------------------------


def test_vllm_gets_the_grammar_in_structured_outputs_and_renders_the_template() -> None:
    engine = StubEngine("vllm", outputs=["yes"])
    llm = _remote(engine)
    assert llm.info.n_ctx == 2048 and llm.info.chat_format is not None
    prompt = llm.format_chat([{"role": "user", "content": "hi"}],
                             tools=[{"type": "function", "function": {"name": "f"}}])
    assert prompt == "<rendered by vllm>"
    chat_tokenize = engine.bodies("/tokenize")[0]
    assert chat_tokenize["messages"][0]["content"] == "hi" and chat_tokenize["tools"]
    assert engine.bodies("/detokenize") == [{"model": MODEL, "tokens": [1, 2, 3]}]
    out = llm.complete(prompt, max_tokens=5, constraint=YES_NO, stop=["\n"])
    assert out.text == "yes" and out.usage.prompt_tokens_reused == 3
    body = engine.bodies("/v1/completions")[-1]
    assert set(body["structured_outputs"]) <= VLLM_STRUCTURED
    assert body["structured_outputs"]["grammar"] == YES_NO.source
    assert (body["model"], body["prompt"], body["max_tokens"], body["temperature"],
            body["stop"]) == (MODEL, prompt, 5, 0.0, ["\n"])
    assert "tools" not in body and "guided_grammar" not in body
    assert llm.count_tokens("abc") == 3
    assert engine.bodies("/tokenize")[-1] == {"model": MODEL, "prompt": "abc"}


def test_sglang_gets_the_grammar_as_ebnf() -> None:
    engine = StubEngine("sglang", outputs=["no"])
    llm = _remote(engine)
    assert llm.complete("Q: ", max_tokens=3, constraint=YES_NO).text == "no"
    body = engine.bodies("/v1/completions")[-1]
    assert body["ebnf"] == YES_NO.source and "structured_outputs" not in body
    assert llm.info.chat_format is None  # no documented template rendering: plain layout
    assert llm.format_chat([{"role": "user", "content": "hi"}]).endswith("Assistant:")


def test_llama_server_gets_marked_llguidance_grammar_without_tools() -> None:
    engine = StubEngine("llama-server", outputs=["yes"])
    llm = _remote(engine)
    assert (llm.info.n_ctx, llm.info.supports_tools) == (1024, True)  # from /props
    prompt = llm.format_chat([{"role": "user", "content": "hi"}],
                             tools=[{"type": "function", "function": {"name": "f"}}])
    assert prompt == "<rendered by llama-server>"
    llm.complete(prompt, max_tokens=3, constraint=YES_NO)
    body = engine.bodies("/v1/completions")[-1]
    assert body["grammar"] == "%llguidance {}\n" + YES_NO.source
    assert body["cache_prompt"] is True and "tools" not in body
    assert llm.count_tokens("abc") == 3
    assert engine.bodies("/tokenize")[-1]["content"] == "abc"


def test_json_schema_constraint_is_sent_as_lark_with_fixed_separators() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    text = lark_text(Constraint(kind="json_schema", source=json.dumps(schema)))
    assert text.startswith("start: %json ")
    sent = json.loads(text.removeprefix("start: %json "))
    assert sent["x-guidance"]["whitespace_flexible"] is False and sent["required"] == ["a"]
    body = completion_body(ServerSpec("http://h/v1", "m"), "p", max_tokens=1, stop=(),
                           temperature=0.0, seed=0, constraint=None)
    assert "structured_outputs" not in body and "stop" not in body


# --- our own check of every output ------------------------------------------------------


def test_an_output_that_breaks_the_grammar_is_retried_once_then_rejected() -> None:
    engine = StubEngine("vllm", outputs=["maybe", "perhaps"])
    llm = _remote(engine)
    with pytest.raises(ConstraintError, match="breaks the grammar yes-no twice"):
        llm.complete("Q: ", max_tokens=3, constraint=YES_NO)
    assert len(engine.bodies("/v1/completions")) == 1 + 2  # canary, then two tries


def test_one_bad_output_then_a_good_one_passes() -> None:
    engine = StubEngine("vllm", outputs=["maybe", "no"])
    assert _remote(engine).complete("Q: ", max_tokens=3, constraint=YES_NO).text == "no"


def test_failures_during_a_run_end_the_run_like_the_local_backend() -> None:
    engine = StubEngine("vllm", outputs=[])
    llm = _remote(engine)
    replies = iter([
        httpx.Response(400, json={"error": {"message": "does not compile",
                                            "type": "constraint_error"}}),
        httpx.Response(500, json={"error": {"message": "out of memory"}}),
        httpx.Response(400, json={"error": {"message": "too long"}}),
    ])
    llm._http = httpx.Client(transport=httpx.MockTransport(lambda request: next(replies)))
    with pytest.raises(ConstraintError, match="does not compile"):
        llm.complete("Q: ", max_tokens=3, constraint=YES_NO)
    for message in ("out of memory", "too long"):
        with pytest.raises(RemoteServerError, match=message) as info:
            llm.complete("Q: ", max_tokens=3)
        assert info.value.exit_code == 1


def test_a_server_that_does_not_enforce_grammars_is_refused_at_connect() -> None:
    engine = StubEngine("sglang", outputs=["Hello! How can I help you?"], enforce=False)
    with pytest.raises(UsageError, match="does not enforce grammars") as info:
        _remote(engine)
    assert info.value.exit_code == 2 and "--grammar-backend llguidance" in info.value.one_line()


def test_a_model_the_server_does_not_serve_is_a_usage_error() -> None:
    engine = StubEngine("vllm")
    spec = ServerSpec(base_url="http://gpu.test/v1", model="other", kind="vllm")
    with pytest.raises(UsageError, match="does not serve 'other'"):
        RemoteLLM(spec, transport=httpx.MockTransport(engine))


# --- a free-text server on loopback, through the real CLI -------------------------------


class _FreeText(BaseHTTPRequestHandler):
    """Answers every completion with free text, like an engine without a grammar backend."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._json({"choices": [{"index": 0, "text": "Hello there!", "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 4, "completion_tokens": 3}})


@pytest.fixture()
def free_text_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FreeText)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_cli_refuses_a_server_that_ignores_grammars_with_exit_2(free_text_server: str) -> None:
    result = run_cli("generate", "hi", "--model", f"{free_text_server}#{MODEL}&kind=vllm",
                     timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not enforce grammars" in lines[0]
    assert "Hello there!" in lines[0] and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_load_llm_sends_names_to_base_url_and_refuses_a_free_text_server(
        free_text_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from localagent.errors import ModelNotFoundError
    from localagent.llm import load_llm

    monkeypatch.setenv("LOCALAGENT_BASE_URL", free_text_server)
    monkeypatch.setenv("LOCALAGENT_SERVER_KIND", "llama-server")
    with pytest.raises(UsageError, match="does not enforce grammars") as info:
        load_llm(MODEL)
    assert "LLAMA_LLGUIDANCE=ON" in info.value.one_line()
    with pytest.raises(ModelNotFoundError):  # a .gguf path stays local
        load_llm("no/such/model.gguf")
