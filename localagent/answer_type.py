"""Typed answers: "give me the answer as this type", guaranteed on a local model.

`answer_type(T)` turns what a user declares into a `Constraint` our loop compiles with
llguidance, and a parser from the constrained text to the typed value:

- a Pydantic model, a dataclass, a TypedDict: a JSON schema (Outlines'
  `python_types_to_terms`; pydantic's `TypeAdapter` for a TypedDict, which Outlines 1.3
  does not take), compiled by our bounded emitter (grammar/jsonlark.py, DESIGN.md trap 2);
  the value is the validated instance;
- `int`, `float`, `bool`, `str`, `datetime.date`/`datetime`/`time`, `Literal[...]`, a
  list of those: Outlines' regular expression for the type (`to_regex`); the value is
  validated by pydantic (a `str` answer is Outlines' JSON string, read as JSON);
- an Outlines type: `Regex`, the ready-made ones (`types.email`, `types.date`, ...) as
  their regular expression, `JsonSchema` as its schema, `CFG` as its Lark grammar (the
  value is the text);
- a JSON schema (a dict, or `--output-schema FILE.json`): checked as a schema, compiled as
  above, the value the parsed JSON.

Outlines is only the type layer here: its generators are not used (they throw the
prompt cache away, DESIGN.md trap 3), and it is imported only when a type is asked for
(its import takes about a second).

Anything that cannot become a grammar raises `AnswerTypeError` (a `UsageError`: one line,
exit 2), before any model work. `typed_answer` is the step that writes the answer.
"""

from __future__ import annotations

import datetime
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.constraint import Constraint
from localagent.errors import ConstraintError, UsageError


class AnswerTypeError(UsageError):
    """A declared answer type that cannot be turned into a grammar, or a bad schema file."""


@dataclass(frozen=True)
class AnswerType:
    """A declared type as the answer step uses it."""

    name: str  # as messages show it: "Invoice", "int", "Literal['ja', 'nein']", "schema"
    constraint: Constraint  # what the answer text must match
    shown: str  # how the prompt states the required form
    parse: Callable[[str], Any]  # the constrained text -> the typed value (raises ValueError)
    accepts: Callable[[Any], Any]  # a value already at hand -> the typed value, or raises
    dump: Callable[[Any], Any]  # the typed value -> JSON-ready data (`--json`)


def answer_type(spec: Any) -> AnswerType:
    """The `AnswerType` of `spec`: a Python type, an Outlines type, or a JSON schema dict."""
    if isinstance(spec, AnswerType):
        return spec
    if isinstance(spec, dict):
        return _from_schema(spec, "schema", adapter=None)
    if type(spec).__module__.startswith("outlines."):
        return _from_outlines_term(spec)
    return _from_python_type(spec)


def answer_type_from_file(path: str | Path) -> AnswerType:
    """The type a JSON schema file declares (`--output-schema`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise AnswerTypeError(f"cannot read the output schema {path}: "
                              f"{exc.strerror or exc}") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise AnswerTypeError(f"the output schema {path} is not JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise AnswerTypeError(f"the output schema {path} must be a JSON object")
    return _from_schema(schema, Path(path).name, adapter=None)


def _type_name(spec: Any) -> str:
    return getattr(spec, "__name__", None) or repr(spec).replace("typing.", "")


SCALARS = (int, float, bool, str, datetime.date, datetime.datetime, datetime.time)


def _is_text_type(spec: Any) -> bool:
    """A type whose answer is one bare value (Outlines writes it as a regular expression):
    the scalars, and `Literal` of strings and numbers."""
    if spec in SCALARS:
        return True
    return typing.get_origin(spec) is typing.Literal and all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool)
        for v in typing.get_args(spec))


def _from_python_type(spec: Any) -> AnswerType:
    from outlines.types.dsl import JsonSchema, python_types_to_terms
    from pydantic import TypeAdapter

    from localagent.tools.schema import pydantic_typeddicts

    name = _type_name(spec)
    try:
        adapter = TypeAdapter(pydantic_typeddicts(spec))
    except Exception as exc:  # noqa: BLE001 - pydantic raises several kinds here
        raise AnswerTypeError(f"cannot use {name} as an answer type: {_line(exc)}") from None
    if not _is_text_type(spec):
        # Structured types are JSON: Outlines' schema of a model or dataclass; pydantic's
        # for what Outlines 1.3 refuses (TypedDict, Optional, tuples, lists of records)
        try:
            term = python_types_to_terms(spec)
        except (TypeError, ValueError):
            term = None
        try:
            schema = (_schema_of(term) if isinstance(term, JsonSchema)
                      else adapter.json_schema())
        except Exception as exc:  # noqa: BLE001
            raise AnswerTypeError(f"cannot use {name} as an answer type: "
                                  f"{_line(exc)}") from None
        return _from_schema(schema, name, adapter=adapter)
    try:
        regex = _regex(python_types_to_terms(spec), name)
    except (TypeError, ValueError) as exc:
        raise AnswerTypeError(f"cannot use {name} as an answer type: {_line(exc)}") from None

    def parse(text: str) -> Any:
        if spec is str:  # Outlines writes a str as a JSON string: read it as one
            value = json.loads(text)
            if not isinstance(value, str):
                raise ValueError("not a JSON string")
            return value
        try:
            return adapter.validate_json(text)
        except ValueError:
            return adapter.validate_python(text)  # True, 2024-03-01, a Literal's word

    return AnswerType(name=name, constraint=Constraint("regex", regex, name="typed-answer"),
                      shown=f"{name}, as text matching the regular expression {regex}",
                      parse=parse, accepts=lambda v: adapter.validate_python(v, strict=True),
                      dump=lambda v: adapter.dump_python(v, mode="json"))


def _from_outlines_term(term: Any) -> AnswerType:
    from outlines.types.dsl import CFG, JsonSchema, Term

    if isinstance(term, JsonSchema):
        return _from_schema(_schema_of(term), "JsonSchema", adapter=None)
    if isinstance(term, CFG):
        constraint = Constraint("lark", term.definition, name="typed-answer")
        _check_compiles(constraint, "CFG")
        return AnswerType(name="CFG", constraint=constraint,
                          shown=f"text of this grammar:\n{term.definition}",
                          parse=lambda t: _text_in(t, constraint),
                          accepts=lambda v: _text_in(v, constraint),
                          dump=lambda v: v)
    if not isinstance(term, Term):
        raise AnswerTypeError(f"cannot use {term!r} as an answer type")
    regex = _regex(term, type(term).__name__)
    constraint = Constraint("regex", regex, name="typed-answer")
    return AnswerType(name="Regex", constraint=constraint,
                      shown=f"text matching the regular expression {regex}",
                      parse=lambda t: _text_in(t, constraint),
                      accepts=lambda v: _text_in(v, constraint), dump=lambda v: v)


def _from_schema(schema: dict[str, Any], name: str, adapter: Any) -> AnswerType:
    """A JSON schema as an answer type; `adapter` (pydantic) builds the typed value from
    the JSON, else the JSON is the value, checked against the schema."""
    import jsonschema

    from localagent.grammar.jsonlark import Bounds, LarkRules

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise AnswerTypeError(f"{name} is not a valid JSON schema: {exc.message}") from None
    rules = LarkRules(Bounds())
    try:
        start = rules.value(schema, root=schema)
    except ConstraintError as exc:
        raise AnswerTypeError(f"{name} cannot become a grammar: {exc}") from None
    if start is None:
        raise AnswerTypeError(f"{name} admits no JSON value this grammar can write")
    rules.define("start", start)
    constraint = Constraint("lark", rules.render(), name="typed-answer")
    _check_compiles(constraint, name)
    validator = jsonschema.Draft202012Validator(schema)

    def checked(value: Any) -> Any:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            raise ValueError(errors[0].message)
        return value

    if adapter is not None:
        parse: Callable[[str], Any] = adapter.validate_json

        def accepts(value: Any) -> Any:
            _covers(schema, value)
            return adapter.validate_python(value)

        def dump(value: Any) -> Any:
            return adapter.dump_python(value, mode="json")
    else:
        def parse(text: str) -> Any:
            return checked(json.loads(text))

        def accepts(value: Any) -> Any:
            _covers(schema, value)
            return checked(value)

        def dump(value: Any) -> Any:
            return value
    shown = json.dumps(_without_titles(schema), ensure_ascii=False)
    return AnswerType(name=name, constraint=constraint,
                      shown=f"JSON matching this schema: {shown}", parse=parse,
                      accepts=accepts, dump=dump)


def _covers(schema: dict[str, Any], value: Any) -> None:
    """A value at hand stands for the answer only when it holds every property the schema
    declares (a record with the type's own keys), not merely the required ones: defaults
    would fill the rest with nothing the results said."""
    props = schema.get("properties")
    if isinstance(props, dict) and props and not (
            isinstance(value, dict) and set(props) <= set(value)):
        raise ValueError("the value lacks some of the type's fields")


def _schema_of(term: Any) -> dict[str, Any]:
    schema = term.schema
    return json.loads(schema) if isinstance(schema, str) else dict(schema)


def _regex(term: Any, name: str) -> str:
    from outlines.types.dsl import to_regex

    try:
        return str(to_regex(term))
    except Exception as exc:  # noqa: BLE001 - Outlines raises several kinds here
        raise AnswerTypeError(f"cannot use {name} as an answer type: {_line(exc)}") from None


def _check_compiles(constraint: Constraint, name: str) -> None:
    """Compile the grammar against a byte tokenizer now, so a bad one fails before the
    model loads (the model's own compile is cached per process)."""
    from localagent.llm.constrained import match_error

    try:
        match_error(constraint, "")
    except ConstraintError as exc:
        raise AnswerTypeError(f"{name} cannot become a grammar: {_line(exc)}") from None


def _text_in(value: Any, constraint: Constraint) -> str:
    from localagent.llm.constrained import matches

    if isinstance(value, str) and matches(constraint, value):
        return value
    raise ValueError("not text of the grammar")


def _without_titles(schema: Any) -> Any:
    """The schema as the prompt shows it: pydantic's generated titles dropped (noise)."""
    if isinstance(schema, dict):
        return {k: _without_titles(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
