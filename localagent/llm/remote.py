"""`RemoteLLM`: the `LLM` interface over an OpenAI-compatible model server.

Selecting it: `--model "http://HOST:PORT/v1#MODEL"` (a URL, `#`, the server's model name;
`&kind=KIND` after the name picks the server kind), or `LOCALAGENT_BASE_URL` (with the
model name from `--model` / `LOCALAGENT_MODEL`). `LOCALAGENT_API_KEY` is sent as a Bearer
token, `LOCALAGENT_SERVER_KIND` is the default kind (`localagent`). The config file can set
all three (`base_url`, `api_key`, `server_kind`).

Where the grammar goes depends on the server kind, each as its own API documents it:

| kind | grammar field in the `/v1/completions` body |
|---|---|
| `vllm` (0.12+, `--structured-outputs-config.backend guidance`) | `structured_outputs: {"grammar": G}` |
| `sglang` (`--grammar-backend llguidance`) | `ebnf: G` |
| `llama-server` (built with `LLAMA_LLGUIDANCE=ON`) | `grammar: "%llguidance {}\\n" + G` |
| `localagent` (`localagent serve`) | as vLLM |

G is the constraint as llguidance Lark text (our grammars are written in it; a JSON-schema
constraint becomes `start: %json {...}` with the local backend's separators). `tools` is
never sent together with a grammar (llama-server answers that with HTTP 400): the chat
template renders the tools into the prompt text, as it does locally.

Why `/v1/completions` with a prompt we render, not `/v1/chat/completions`: planners render
the chat template themselves (`format_chat`) and complete the text, so the remote backend
renders through the server (`/apply-template` on llama-server and `localagent serve`,
`/tokenize` + `/detokenize` on vLLM) and sends the same text: the same model under the same
grammar, greedy, then writes the same plan as the local backend. SGLang documents no way
to render a template without generating, so over SGLang prompts use the plain role-prefixed
layout (`chat_format` None), as for a base model.

Two guarantees, because a server that ignores a grammar would hand us free text:
1. on connect a canary request under a grammar that admits exactly one string that no model
   writes on its own; any other answer (or an HTTP error) is a `UsageError` (exit 2) with a
   hint on how to turn grammar enforcement on for that kind; never a fallback;
2. every output under a constraint is checked here against the same grammar
   (`constrained.match_error`); a violation is retried once, then a `ConstraintError`.

Why httpx and not Outlines' server models (`from_vllm`, `from_sglang`): they wrap the
openai client and Outlines' output types around what is here one JSON field per kind,
cover neither llama-server nor the render and tokenize routes, and the canary and the
local check would still be ours.

Not supported remotely: `give_up` (the server generates to its end; the planner's parser
then rejects the same text) and streaming.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit

from localagent.constraint import Constraint
from localagent.errors import ConstraintError, RuntimeFailure, UsageError
from localagent.llm.base import LLM, Completion, GiveUp, Message, ModelInfo, Usage
from localagent.llm.chat_template import plain_chat

if TYPE_CHECKING:
    import httpx

ServerKind = Literal["localagent", "vllm", "sglang", "llama-server"]
SERVER_KINDS: tuple[str, ...] = get_args(ServerKind)
BASE_URL_ENV = "LOCALAGENT_BASE_URL"
API_KEY_ENV = "LOCALAGENT_API_KEY"
KIND_ENV = "LOCALAGENT_SERVER_KIND"
DEFAULT_N_CTX = 4096
DEFAULT_TIMEOUT_S = 600.0

CANARY_TEXT = "qz7-canary-XW4"
CANARY_CONSTRAINT = Constraint(kind="lark", source=f'start: "{CANARY_TEXT}"', name="canary")
CANARY_PROMPT = "Say hello.\n"
LLGUIDANCE_MARKER = "%llguidance {}\n"
CONSTRAINT_ERROR_TYPE = "constraint_error"  # `localagent serve`: the grammar does not compile

ENFORCE_HINTS: dict[str, str] = {
    "vllm": "start vLLM with --structured-outputs-config.backend guidance",
    "sglang": "start SGLang with --grammar-backend llguidance",
    "llama-server": "use a llama-server built with -DLLAMA_LLGUIDANCE=ON",
    "localagent": "is this `localagent serve`? else name the server kind: URL#MODEL&kind=vllm",
}


class RemoteServerError(RuntimeFailure):
    """The model server failed a request during a run (unreachable, HTTP 5xx, bad reply)."""


@dataclass(frozen=True)
class ServerSpec:
    """Where the model is: `base_url` ends in `/v1`; `model` is the server's model name."""

    base_url: str
    model: str
    kind: ServerKind = "localagent"
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT_S

    @property
    def root(self) -> str:
        """The server root: non-OpenAI routes (`/tokenize`, `/props`...) live there."""
        base = self.base_url.rstrip("/")
        return base.removesuffix("/v1")


def is_remote_source(source: object) -> bool:
    """Whether a `--model` value names a server (`http://` or `https://`)."""
    return isinstance(source, str) and source.strip().lower().startswith(("http://", "https://"))


def remote_spec(source: str | os.PathLike[str] | None, *, default_model: str,
                env: Mapping[str, str] | None = None) -> ServerSpec | None:
    """The server a model source names, or None for a local model.

    A URL source is parsed (`parse_source`). Otherwise, with `LOCALAGENT_BASE_URL` set, a
    name that is not a path (or no name: `default_model`) is served from that URL.
    """
    env = os.environ if env is None else env
    if is_remote_source(source):
        return parse_source(str(source), env=env)
    base = (env.get(BASE_URL_ENV) or "").strip()
    if not base:
        return None
    name = str(source) if source is not None else default_model
    if name.endswith(".gguf") or "/" in name and os.path.exists(name):
        return None  # a local file stays local
    return _spec(base, name, None, env)


def parse_source(source: str, *, env: Mapping[str, str] | None = None) -> ServerSpec:
    """`URL#MODEL[&kind=KIND]` into a `ServerSpec`; UsageError (exit 2) when malformed."""
    env = os.environ if env is None else env
    url, _, fragment = source.strip().partition("#")
    parts = [p for p in fragment.split("&") if p]
    model, kind = None, None
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq:
            model = part
        elif key == "model":
            model = value
        elif key == "kind":
            kind = value
        else:
            raise UsageError(f"--model {source}: unknown option {key!r} after '#'",
                             hint="URL#MODEL or URL#MODEL&kind=vllm")
    if not model:
        raise UsageError(f"--model {source}: no model name after '#'",
                         hint="e.g. http://127.0.0.1:8000/v1#qwen2.5-coder-0.5b-instruct")
    return _spec(url, model, kind, env)


def _spec(url: str, model: str, kind: str | None, env: Mapping[str, str]) -> ServerSpec:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"model server URL {url!r} is not an http(s) URL")
    kind = kind or (env.get(KIND_ENV) or "").strip() or "localagent"
    if kind not in SERVER_KINDS:
        raise UsageError(f"unknown server kind {kind!r}", hint=f"one of {', '.join(SERVER_KINDS)}")
    base = url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    key = (env.get(API_KEY_ENV) or "").strip() or None
    return ServerSpec(base_url=base, model=model, kind=kind, api_key=key)  # type: ignore[arg-type]


# --- request shapes -------------------------------------------------------------------


def lark_text(constraint: Constraint) -> str:
    """The constraint as llguidance Lark text, the grammar language all four servers take."""
    if constraint.kind == "lark":
        return constraint.source
    if constraint.kind == "json_schema":
        schema = json.loads(constraint.source)
        if isinstance(schema, dict):  # the separators the local backend uses (Trap 2)
            schema = {**schema, "x-guidance": {"whitespace_flexible": False,
                                               "item_separator": ", ", "key_separator": ": "}}
        return "start: %json " + json.dumps(schema)
    if constraint.kind == "regex":
        return "start: /" + constraint.source.replace("/", "\\/") + "/"
    raise ConstraintError(f"unknown constraint kind {constraint.kind!r}")


def grammar_fields(kind: ServerKind, constraint: Constraint | None) -> dict[str, Any]:
    """The body fields that carry `constraint` to a server of `kind` ({} without one)."""
    if constraint is None:
        return {}
    grammar = lark_text(constraint)
    if kind == "sglang":
        return {"ebnf": grammar}
    if kind == "llama-server":
        return {"grammar": grammar if grammar.startswith("%llguidance")
                else LLGUIDANCE_MARKER + grammar}
    return {"structured_outputs": {"grammar": grammar}}


def completion_body(spec: ServerSpec, prompt: str, *, max_tokens: int, stop: Sequence[str],
                    temperature: float, seed: int,
                    constraint: Constraint | None) -> dict[str, Any]:
    """The `/v1/completions` body for one generation on `spec`'s server."""
    body: dict[str, Any] = {"model": spec.model, "prompt": prompt, "max_tokens": max_tokens,
                            "temperature": temperature, "seed": seed}
    if stop:
        body["stop"] = list(stop)
    if spec.kind == "llama-server":
        body["cache_prompt"] = True  # keep the shared prefix in the slot's KV cache
    body.update(grammar_fields(spec.kind, constraint))
    return body


# --- the backend ----------------------------------------------------------------------


class RemoteLLM(LLM):
    """A model on an OpenAI-compatible server; thread-safe (httpx's client is).

    Construction connects: it reads the model list (the name must be served, except on
    llama-server, which serves one model under any name) and the context size, then runs
    the canary unless `canary=False`. Connection problems then are `UsageError`s (exit 2);
    during a run, a refused API key is a `UsageError`, a grammar the server cannot compile
    a `ConstraintError` and any other failure a `RemoteServerError` (both exit 1, so the
    agent reports a run without an answer, as with the local backend). `transport` is for httpx stubs in tests.
    """

    def __init__(self, spec: ServerSpec, *, temperature: float = 0.0, seed: int = 0,
                 canary: bool = True, transport: httpx.BaseTransport | None = None) -> None:
        import httpx

        self.spec = spec
        self.temperature = temperature
        self.seed = seed
        headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
        self._http = httpx.Client(headers=headers, timeout=spec.timeout, transport=transport)
        self._connecting = True
        try:
            self.info = self._describe()
            if canary:
                self.check_grammar_enforced()
        except BaseException:
            self._http.close()
            raise
        self._connecting = False

    # --- LLM interface ----------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float | None = None,
        seed: int | None = None,
        constraint: Constraint | None = None,
        give_up: GiveUp | None = None,
    ) -> Completion:
        body = completion_body(
            self.spec, prompt, max_tokens=max_tokens, stop=stop,
            temperature=self.temperature if temperature is None else temperature,
            seed=self.seed if seed is None else seed, constraint=constraint)
        problem = ""
        for _ in range(2):  # a violation is retried once, then rejected
            completion = self._generate(body, prompt)
            problem = violation(constraint, completion, bool(stop)) or ""
            if not problem:
                return completion
        assert constraint is not None
        raise ConstraintError(
            f"{self.spec.base_url} ({self.spec.kind}) returned output that breaks the "
            f"grammar {constraint.name or constraint.kind} twice: {problem}",
            hint=ENFORCE_HINTS[self.spec.kind])

    def format_chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        kind = self.spec.kind
        if kind == "sglang":
            return plain_chat(messages, tools=tools, add_generation_prompt=add_generation_prompt)
        body: dict[str, Any] = {"messages": list(messages),
                                "add_generation_prompt": add_generation_prompt}
        if tools:
            body["tools"] = list(tools)
        if kind == "vllm":
            body["model"] = self.spec.model
            tokens = self._post(f"{self.spec.root}/tokenize", body).get("tokens")
            reply = self._post(f"{self.spec.root}/detokenize",
                               {"model": self.spec.model, "tokens": tokens})
        else:
            reply = self._post(f"{self.spec.root}/apply-template", body)
        prompt = reply.get("prompt")
        if not isinstance(prompt, str):
            raise RemoteServerError(f"{self.spec.root}: no rendered prompt in the reply")
        return prompt

    def count_tokens(self, text: str) -> int:
        if self.spec.kind == "llama-server":
            reply = self._post(f"{self.spec.root}/tokenize",
                               {"content": text, "add_special": True, "parse_special": True})
            return len(reply.get("tokens") or [])
        reply = self._post(f"{self.spec.root}/tokenize", {"model": self.spec.model,
                                                          "prompt": text})
        count = reply.get("count")
        return int(count) if isinstance(count, int) else len(reply.get("tokens") or [])

    def close(self) -> None:
        self._http.close()

    # --- connecting -------------------------------------------------------------------

    def check_grammar_enforced(self) -> None:
        """The canary: a grammar that admits only `CANARY_TEXT` must get exactly that back.

        Raises UsageError (exit 2) otherwise: the server would not enforce our grammars.
        """
        body = completion_body(self.spec, CANARY_PROMPT, max_tokens=16, stop=(),
                               temperature=0.0, seed=0, constraint=CANARY_CONSTRAINT)
        try:
            text = self._generate(body, CANARY_PROMPT).text
        except UsageError as exc:
            raise UsageError(f"the model server at {self.spec.base_url} rejected a request "
                             f"under a grammar: {exc}", hint=ENFORCE_HINTS[self.spec.kind]
                             ) from None
        if text != CANARY_TEXT:
            raise UsageError(
                f"the model server at {self.spec.base_url} ({self.spec.kind}) does not "
                f"enforce grammars: asked for {CANARY_TEXT!r} under a grammar, got "
                f"{text[:60]!r}; refusing to run on free text",
                hint=ENFORCE_HINTS[self.spec.kind])

    def _describe(self) -> ModelInfo:
        listing = self._get(f"{self.spec.base_url}/models")
        entries = [e for e in listing.get("data") or [] if isinstance(e, dict)]
        ids = [str(e.get("id")) for e in entries]
        entry = next((e for e in entries if e.get("id") == self.spec.model), None)
        if entry is None and self.spec.kind != "llama-server":
            raise UsageError(f"the model server at {self.spec.base_url} does not serve "
                             f"{self.spec.model!r}", hint=f"it serves: {', '.join(ids) or 'none'}")
        entry = entry or {}
        n_ctx = entry.get("max_model_len") or DEFAULT_N_CTX
        chat_format: str | None = {"vllm": "hf", "sglang": None}.get(self.spec.kind, "gguf")
        supports_tools = self.spec.kind == "vllm"
        if self.spec.kind == "localagent":
            extra = entry.get("localagent") or {}
            chat_format = extra.get("chat_format")
            supports_tools = bool(extra.get("supports_tools"))
        elif self.spec.kind == "llama-server":
            props = self._get(f"{self.spec.root}/props")
            template = props.get("chat_template") or ""
            chat_format = "gguf" if template else None
            supports_tools = "tools" in template
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") or n_ctx
        return ModelInfo(name=self.spec.model, path=self.spec.base_url, chat_format=chat_format,
                         n_ctx=int(n_ctx), supports_tools=supports_tools)

    # --- HTTP -------------------------------------------------------------------------

    def _generate(self, body: dict[str, Any], prompt: str) -> Completion:
        start = time.perf_counter()
        data = self._post(f"{self.spec.base_url}/completions", body)
        seconds = time.perf_counter() - start
        try:
            choice = data["choices"][0]
            text = str(choice["text"])
        except (KeyError, IndexError, TypeError):
            raise RemoteServerError(f"{self.spec.base_url}/completions: a reply without "
                                    "choices[0].text") from None
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        reused = details.get("cached_tokens") or (data.get("timings") or {}).get("cache_n") or 0
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        return Completion(
            text=text,
            usage=Usage(calls=1, prompt_tokens=prompt_tokens,
                        prompt_tokens_reused=min(int(reused), prompt_tokens),
                        completion_tokens=int(usage.get("completion_tokens") or 0),
                        seconds=seconds),
            finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
            prompt=prompt)

    def _get(self, url: str) -> dict[str, Any]:
        return self._request("GET", url, None)

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", url, body)

    def _request(self, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        import httpx

        failure = UsageError if self._connecting else RemoteServerError
        try:
            response = self._http.request(method, url, json=body)
        except httpx.HTTPError as exc:
            raise failure(f"cannot reach the model server at {url}: {exc}") from None
        if response.status_code in (401, 403):
            raise UsageError(f"the model server at {url} refused the API key "
                             f"(HTTP {response.status_code})", hint=f"set {API_KEY_ENV}")
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400:
            message = _error_message(data) or response.text[:200]
            # As the local backend: a grammar that does not compile is a ConstraintError,
            # and during a run any failed request ends the run without an answer (exit 1).
            error = (ConstraintError if _error_type(data) == CONSTRAINT_ERROR_TYPE
                     and not self._connecting else failure)
            raise error(f"{method} {url}: HTTP {response.status_code}: {message}")
        if not isinstance(data, dict):
            raise failure(f"{method} {url}: the reply is not a JSON object")
        return data


def _error_type(data: Any) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    return str(error.get("type", "")) if isinstance(error, dict) else ""


def _error_message(data: Any) -> str:
    if isinstance(data, dict):
        error = data.get("error", data.get("message", ""))
        if isinstance(error, dict):
            return str(error.get("message", ""))
        return str(error)
    return ""


def violation(constraint: Constraint | None, completion: Completion, stopped: bool) -> str | None:
    """Why a server's output breaks `constraint` (None when it does not).

    A text cut short (max_tokens, or one of the caller's stop strings) need only be a
    prefix of a match: truncation is the planner's to handle, as with the local backend.
    """
    if constraint is None:
        return None
    from localagent.llm.constrained import match_error

    problem = match_error(constraint, completion.text)
    if problem is None:
        return None
    if problem.startswith("text is incomplete") and (completion.truncated or stopped):
        return None
    return problem
