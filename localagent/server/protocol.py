"""The OpenAI-compatible wire format of `localagent serve`: request bodies in, responses out.

Contract: `completion_request(body)` and `chat_request(body)` turn a decoded JSON body into
a frozen `GenerationRequest` or raise `BadRequest` (HTTP 400) naming the offending field;
`completion_response` / `chat_response` build the OpenAI response objects from a
`Completion`. No model and no socket here, so the format is tested on its own.

Where the grammar goes: vLLM's field, `structured_outputs: {"grammar": G}` (what the openai
client sends for `extra_body={"structured_outputs": {...}}`), with `json` (a JSON schema,
object or text) and `regex` as its siblings, exactly one of them. A grammar is llguidance
Lark text, as our grammar builders write it; a leading `%llguidance {}` line (llama-server's
marker) is accepted too. OpenAI's own field, `response_format` (`json_schema`,
`json_object`, `text`), is accepted as well, instead of `structured_outputs`. The constraint
is applied by our own constraint layer, so the server enforces what vLLM's `guidance`
backend would.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from localagent.constraint import Constraint
from localagent.llm.base import Completion, Message

DEFAULT_MAX_TOKENS = 16  # the OpenAI completions API's default
GRAMMAR_FIELDS = ("grammar", "json", "regex")
RESPONSE_FORMATS = ("json_schema", "json_object", "text")


class BadRequest(Exception):
    """A request the server cannot serve as asked: answered with HTTP 400 and the message."""


@dataclass(frozen=True)
class GenerationRequest:
    """One generation, as the model backend takes it."""

    model: str | None
    prompt: str | None  # /v1/completions
    messages: tuple[Message, ...] | None  # /v1/chat/completions
    tools: tuple[dict[str, Any], ...] | None
    max_tokens: int
    stop: tuple[str, ...]
    temperature: float | None
    seed: int | None
    constraint: Constraint | None


def completion_request(body: Any) -> GenerationRequest:
    """A `/v1/completions` body: `prompt` must be one text (or a list holding one)."""
    body = _object(body)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise BadRequest("'prompt' must be a string (one prompt per request)")
    return _request(body, prompt=prompt, messages=None, tools=None)


def chat_request(body: Any) -> GenerationRequest:
    """A `/v1/chat/completions` body: `messages` (and optional `tools`) in OpenAI form."""
    body = _object(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise BadRequest("'messages' must be a non-empty list of {role, content} objects")
    tools = body.get("tools")
    if tools is not None and not (isinstance(tools, list)
                                  and all(isinstance(t, dict) for t in tools)):
        raise BadRequest("'tools' must be a list of objects")
    return _request(body, prompt=None, messages=tuple(messages),
                    tools=tuple(tools) if tools else None)


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if body.get("stream"):
        raise BadRequest("'stream' is not supported by localagent serve")
    if body.get("n", 1) != 1:
        raise BadRequest("'n' must be 1")
    return body


def _request(body: dict[str, Any], *, prompt: str | None, messages: tuple[Message, ...] | None,
             tools: tuple[dict[str, Any], ...] | None) -> GenerationRequest:
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("'model' must be a string")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", DEFAULT_MAX_TOKENS))
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest("'max_tokens' must be a whole number >= 1")
    stop = body.get("stop") or ()
    if isinstance(stop, str):
        stop = (stop,)
    if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("'stop' must be a string or a list of strings")
    temperature = body.get("temperature")
    if temperature is not None and (isinstance(temperature, bool)
                                    or not isinstance(temperature, (int, float))
                                    or temperature < 0):
        raise BadRequest("'temperature' must be a number >= 0")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest("'seed' must be a whole number")
    return GenerationRequest(
        model=model, prompt=prompt, messages=messages, tools=tools, max_tokens=max_tokens,
        stop=tuple(stop), temperature=None if temperature is None else float(temperature),
        seed=seed, constraint=constraint_from(body))


def constraint_from(body: dict[str, Any]) -> Constraint | None:
    """The constraint a body asks for in `structured_outputs` or OpenAI's `response_format`
    (None: free text); both at once is a bad request."""
    outputs = body.get("structured_outputs")
    response_format = body.get("response_format")
    if response_format is not None:
        if outputs is not None:
            raise BadRequest("give 'response_format' or 'structured_outputs', not both")
        return _response_format(response_format)
    if outputs is None:
        return None
    if not isinstance(outputs, dict):
        raise BadRequest("'structured_outputs' must be an object")
    given = [f for f in GRAMMAR_FIELDS if outputs.get(f) is not None]
    unknown = sorted(set(outputs) - set(GRAMMAR_FIELDS))
    if unknown:
        raise BadRequest(f"structured_outputs: unsupported field(s) {', '.join(unknown)} "
                         f"(supported: {', '.join(GRAMMAR_FIELDS)})")
    if len(given) != 1:
        raise BadRequest("structured_outputs must give exactly one of "
                         + ", ".join(GRAMMAR_FIELDS))
    field = given[0]
    value = outputs[field]
    if field == "json":
        source = value if isinstance(value, str) else json.dumps(value)
        return Constraint(kind="json_schema", source=source, name="request-json")
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"structured_outputs.{field} must be a non-empty string")
    if field == "regex":
        return Constraint(kind="regex", source=value, name="request-regex")
    return Constraint(kind="lark", source=value, name="request-grammar")


def _response_format(value: Any) -> Constraint | None:
    """OpenAI's structured outputs: `{"type": "json_schema", "json_schema": {"name": N,
    "schema": S, "strict": true}}`, `{"type": "json_object"}` (any JSON object) or
    `{"type": "text"}` (free text). The schema is enforced whatever `strict` says: the
    grammar makes it cost nothing."""
    if not isinstance(value, dict) or value.get("type") not in RESPONSE_FORMATS:
        raise BadRequest("'response_format' must be an object whose type is one of "
                         + ", ".join(RESPONSE_FORMATS))
    if value["type"] == "text":
        return None
    if value["type"] == "json_object":
        return Constraint(kind="json_schema", source='{"type": "object"}', name="request-json")
    spec = value.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        raise BadRequest("response_format.json_schema.schema must be a JSON schema object")
    return Constraint(kind="json_schema", source=json.dumps(schema), name="request-json")


def _usage(completion: Completion) -> dict[str, Any]:
    u = completion.usage
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.prompt_tokens_reused},
    }


def completion_response(model: str, completion: Completion) -> dict[str, Any]:
    """An OpenAI `text_completion` object."""
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "text": completion.text, "logprobs": None,
                     "finish_reason": completion.finish_reason}],
        "usage": _usage(completion),
    }


def chat_response(model: str, completion: Completion) -> dict[str, Any]:
    """An OpenAI `chat.completion` object; the text is the message content (tool calls
    written by the model stay in the text: we do not parse a template's markup here)."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text},
                     "logprobs": None, "finish_reason": completion.finish_reason}],
        "usage": _usage(completion),
    }


def error_body(message: str, kind: str = "invalid_request_error",
               code: int = 400) -> dict[str, Any]:
    """The OpenAI error shape, which the openai client turns into its exceptions."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
