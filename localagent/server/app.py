"""`ModelServer`: one local model behind an OpenAI-compatible HTTP endpoint.

Routes: `GET /v1/models`, `POST /v1/completions`, `POST /v1/chat/completions` (the OpenAI
API, with vLLM's `structured_outputs` grammar field, see `protocol.py`), `GET /health`
(readiness, no key needed), and two helpers with the shapes other servers use, so the
remote backend renders prompts exactly as the local one does: `POST /apply-template`
(llama-server's: messages and tools in, `{"prompt": ...}` out, rendered with the GGUF's own
chat template) and `POST /tokenize` (vLLM's: `{"prompt": ...}` in, `{"count", "tokens",
"max_model_len"}` out).

Why the standard library's `ThreadingHTTPServer` and not starlette + uvicorn: there is one
model, and one generation runs at a time (a lock held for the whole model call, so
concurrent requests wait their turn and never interleave tokens or KV-cache state). An
event loop would add nothing but a dependency and a thread pool around the same lock;
a thread per connection is enough for a small team and needs nothing beyond Python.
Streaming is not offered.

Auth: with an API key, every route but `/health` needs `Authorization: Bearer KEY`
(compared in constant time); anything else gets 401 in the OpenAI error shape.
"""

from __future__ import annotations

import hmac
import json
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typing_extensions import Self

from localagent.errors import ConstraintError, LocalAgentError
from localagent.llm.base import LLM, Completion
from localagent.llm.remote import CONSTRAINT_ERROR_TYPE
from localagent.server.protocol import (
    BadRequest,
    GenerationRequest,
    chat_request,
    chat_response,
    completion_request,
    completion_response,
    error_body,
)

MAX_BODY_BYTES = 8 * 1024 * 1024


class ModelServer:
    """Serves `llm` under `model_name` on (host, port); port 0 picks a free one.

    `start()` serves on a background thread (tests, benchmarks), `serve_forever()` on the
    calling one (the CLI); `close()` stops and frees the socket. `requests_served` counts
    finished generations.
    """

    def __init__(self, llm: LLM, *, model_name: str | None = None, host: str = "127.0.0.1",
                 port: int = 8000, api_key: str | None = None) -> None:
        self.llm = llm
        self.model_name = model_name or llm.info.name
        self.api_key = api_key or None
        self.model_lock = threading.Lock()
        self.requests_served = 0
        self._thread: threading.Thread | None = None
        self.httpd = _HTTPServer((host, port), _handler_for(self))

    @property
    def host(self) -> str:
        return str(self.httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self) -> ModelServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                        name="localagent-serve")
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what the routes do ---------------------------------------------------------

    def authorized(self, header: str | None) -> bool:
        if self.api_key is None:
            return True
        expected = f"Bearer {self.api_key}".encode()
        return hmac.compare_digest((header or "").encode(), expected)

    def models(self) -> dict[str, Any]:
        info = self.llm.info
        return {"object": "list", "data": [{
            "id": self.model_name, "object": "model", "created": int(time.time()),
            "owned_by": "localagent", "max_model_len": info.n_ctx,
            "localagent": {"chat_format": info.chat_format,
                           "supports_tools": info.supports_tools}}]}

    def generate(self, request: GenerationRequest) -> Completion:
        """One generation, waiting for the model if another request holds it."""
        if request.model is not None and request.model != self.model_name:
            raise _NotFound(f"model {request.model!r} is not served here "
                            f"(this server serves {self.model_name!r})")
        with self.model_lock:
            if request.messages is not None:
                prompt = self.llm.format_chat(list(request.messages),
                                              tools=list(request.tools or []) or None)
            else:
                prompt = request.prompt or ""
            n_prompt = self.llm.count_tokens(prompt)
            room = self.llm.info.n_ctx - n_prompt - 1
            if room < 1:
                raise BadRequest(f"the prompt has {n_prompt} tokens; the context window "
                                 f"holds {self.llm.info.n_ctx}")
            completion = self.llm.complete(
                prompt, max_tokens=min(request.max_tokens, room), stop=request.stop,
                temperature=request.temperature, seed=request.seed,
                constraint=request.constraint)
            self.requests_served += 1
        return completion

    def apply_template(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise BadRequest("'messages' must be a list")
        tools = body.get("tools") or None
        with self.model_lock:
            prompt = self.llm.format_chat(body["messages"], tools=tools,
                                          add_generation_prompt=bool(
                                              body.get("add_generation_prompt", True)))
        return {"prompt": prompt}

    def tokenize(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            raise BadRequest("'prompt' must be a string")
        with self.model_lock:
            tokenize = getattr(self.llm, "tokenize", None)
            tokens = list(tokenize(body["prompt"])) if callable(tokenize) else []
            count = len(tokens) if tokens else self.llm.count_tokens(body["prompt"])
        return {"count": count, "tokens": tokens, "max_model_len": self.llm.info.n_ctx}


class _HTTPServer(ThreadingHTTPServer):
    """One thread per connection; IPv6 hosts work; a client that hangs up is not an error."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # the client went away before its answer was written
        super().handle_error(request, client_address)


class _NotFound(Exception):
    """Answered with HTTP 404."""


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        model_server = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    model_server: ModelServer
    protocol_version = "HTTP/1.1"  # keep-alive: the remote backend reuses its connection
    server_version = "localagent-serve"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per request would drown the CLI's own output."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/health":
            self._send(HTTPStatus.OK, {"status": "ok"})
            return
        if not self._check_key():
            return
        if self.path.rstrip("/") == "/v1/models":
            self._send(HTTPStatus.OK, self.model_server.models())
        else:
            self._send(HTTPStatus.NOT_FOUND, error_body(f"no route GET {self.path}",
                                                        "not_found_error", 404))

    def do_POST(self) -> None:
        if not self._check_key():
            self._drain()
            return
        routes = {
            "/v1/completions": lambda b: completion_response(
                self.model_server.model_name,
                self.model_server.generate(completion_request(b))),
            "/v1/chat/completions": lambda b: chat_response(
                self.model_server.model_name, self.model_server.generate(chat_request(b))),
            "/apply-template": self.model_server.apply_template,
            "/tokenize": self.model_server.tokenize,
        }
        route = routes.get(self.path.rstrip("/"))
        if route is None:
            self._drain()
            self._send(HTTPStatus.NOT_FOUND, error_body(f"no route POST {self.path}",
                                                        "not_found_error", 404))
            return
        try:
            self._send(HTTPStatus.OK, route(self._body()))
        except BadRequest as exc:
            self._send(HTTPStatus.BAD_REQUEST, error_body(str(exc)))
        except _NotFound as exc:
            self._send(HTTPStatus.NOT_FOUND, error_body(str(exc), "not_found_error", 404))
        except ConstraintError as exc:  # a grammar that does not compile: the client's
            self._send(HTTPStatus.BAD_REQUEST, error_body(exc.one_line(), CONSTRAINT_ERROR_TYPE))
        except LocalAgentError as exc:  # e.g. a prompt longer than the context window
            self._send(HTTPStatus.BAD_REQUEST, error_body(exc.one_line()))
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the server
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR,
                       error_body(f"{type(exc).__name__}: {exc}", "server_error", 500))

    # --- plumbing -------------------------------------------------------------------

    def _check_key(self) -> bool:
        if self.model_server.authorized(self.headers.get("Authorization")):
            return True
        self._send(HTTPStatus.UNAUTHORIZED,
                   error_body("invalid or missing API key (send Authorization: Bearer KEY)",
                              "authentication_error", 401))
        return False

    def _length(self) -> int:
        try:
            return max(0, int(self.headers.get("Content-Length") or 0))
        except ValueError:
            return 0

    def _drain(self) -> None:
        length = self._length()
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)
        elif length:
            self.close_connection = True

    def _body(self) -> Any:
        length = self._length()
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(f"the request body is larger than {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadRequest(f"the request body is not JSON: {exc}") from None

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == HTTPStatus.UNAUTHORIZED:
            self.send_header("WWW-Authenticate", "Bearer")
        self.end_headers()
        self.wfile.write(data)
