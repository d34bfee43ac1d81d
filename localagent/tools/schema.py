"""Derive a function's argument schema, return schema and validator, once, with pydantic.

The signature, the type hints (`Annotated[..., Field(...)]` or `Annotated[..., "text"]`)
and the docstring (`Args:` sections) are folded into one pydantic model: its JSON schema
is what models and grammars see, its validator coerces what they send back (`"2000"` for
an int becomes 2000). This is pydantic-ai's `_function_schema` idea in a smaller form.

Fields are named `p0, p1, ...` with the real parameter names as aliases, so a parameter
called `json`, `copy` or `model_config` cannot clash with BaseModel's attributes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints
from typing import is_typeddict as typing_is_typeddict

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo
from typing_extensions import TypedDict

_TEXT_TYPEDDICT_META = type(TypedDict("_Probe", {}))

from localagent.errors import InvalidArgumentsError, PluginLoadError
from localagent.tools.docstrings import parse_docstring

_CONFIG = ConfigDict(extra="forbid", coerce_numbers_to_str=True, populate_by_name=False)
_SKIP_KEYS = {"default", "enum", "const", "examples"}


@dataclass(frozen=True)
class FunctionSchema:
    """Everything derived from one function: what the model sees and how to check it."""

    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any]
    model: type[BaseModel]
    positional_only: tuple[str, ...] = ()

    def validate(self, qualified_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Coerce `args`; raise one InvalidArgumentsError that lists every problem."""
        return validate_with(self.model, qualified_name, args)


def function_schema(
    func: Callable[..., Any], qualified_name: str, description: str | None = None
) -> FunctionSchema:
    """Build the schema of `func` (already bound if it is a method)."""
    try:
        signature = inspect.signature(func)
        hints = get_type_hints(func, include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise PluginLoadError(f"cannot read the signature of {qualified_name}: {exc}") from None
    doc = parse_docstring(inspect.getdoc(func))
    fields: dict[str, Any] = {}
    positional_only: list[str] = []
    for i, (pname, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise PluginLoadError(
                f"{qualified_name}: *args/**kwargs cannot be described to a model"
            )
        if param.kind is param.POSITIONAL_ONLY:
            positional_only.append(pname)
        annotation, text, has_field_description = _split_annotation(hints.get(pname, Any))
        default = ... if param.default is param.empty else param.default
        info: dict[str, Any] = {"alias": pname}
        if not has_field_description and (text or doc.params.get(pname)):
            info["description"] = text or doc.params[pname]
        fields[f"p{i}"] = (annotation, Field(default, **info))
    model = _create_model(qualified_name, fields)
    parameters = _parameters_schema(model, qualified_name)
    returns = _returns_schema(hints, qualified_name)
    return FunctionSchema(
        description=(description if description is not None else doc.summary).strip(),
        parameters=parameters,
        returns=returns,
        model=model,
        positional_only=tuple(positional_only),
    )


def string_parameters_model(
    qualified_name: str, params: Mapping[str, tuple[str, str | None, bool]]
) -> tuple[type[BaseModel], dict[str, Any]]:
    """A model and schema for string-only arguments: name -> (description, default, required).

    Prompt functions use this: every template variable is a string.
    """
    fields: dict[str, Any] = {}
    for i, (pname, (text, default, required)) in enumerate(params.items()):
        value: Any = ... if required else default
        fields[f"p{i}"] = (str, Field(value, alias=pname, description=text or None))
    model = _create_model(qualified_name, fields)
    return model, _parameters_schema(model, qualified_name)


def validate_with(
    model: type[BaseModel], qualified_name: str, args: Mapping[str, Any]
) -> dict[str, Any]:
    if not isinstance(args, Mapping):
        raise InvalidArgumentsError(
            f"arguments for {qualified_name} must be an object, got {type(args).__name__}"
        )
    try:
        instance = model.model_validate(dict(args))
    except ValidationError as exc:
        expected = ", ".join(f.alias or n for n, f in model.model_fields.items()) or "none"
        problems = [_problem(err) for err in exc.errors(include_url=False)]
        raise InvalidArgumentsError(
            f"invalid arguments for {qualified_name}: " + "; ".join(problems),
            hint=f"arguments: {expected}",
        ) from None
    return {f.alias or n: getattr(instance, n) for n, f in model.model_fields.items()}


def _problem(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(part) for part in err.get("loc", ())) or "(arguments)"
    kind = err.get("type")
    if kind == "missing":
        return f"missing argument '{loc}'"
    if kind == "extra_forbidden":
        return f"unknown argument '{loc}'"
    shown = repr(err.get("input"))
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"argument '{loc}': {err.get('msg', 'invalid')} (got {shown})"


def _split_annotation(annotation: Any) -> tuple[Any, str | None, bool]:
    """(type without string metadata, the string description, has a Field description)."""
    if get_origin(annotation) is not Annotated:
        return annotation, None, False
    base, *metadata = get_args(annotation)
    texts = [m for m in metadata if isinstance(m, str)]
    others = [m for item in metadata if not isinstance(item, str) for m in _outlines_term(item)]
    has_field_description = any(isinstance(m, FieldInfo) and m.description for m in others)
    kept = Annotated[(base, *others)] if others else base  # type: ignore[valid-type]
    return kept, (" ".join(texts) or None), has_field_description


def _outlines_term(item: Any) -> list[Any]:
    """Metadata as pydantic reads it. An Outlines type (`Regex(r"[A-Z]{3}")`,
    `outlines.types.email`) stays for validation (it checks a full match) and adds its
    regular expression, anchored, as the JSON schema's `pattern`: JSON Schema's `pattern`
    matches anywhere, and the grammars (grammar/jsonlark.py) enforce the schema as written.
    Outlines is imported only when such metadata is present (its import takes a second)."""
    if not type(item).__module__.startswith("outlines."):
        return [item]
    from outlines.types.dsl import Term, to_regex
    from pydantic import WithJsonSchema

    if not isinstance(item, Term):
        return [item]
    try:
        regex = to_regex(item)
    except Exception as exc:  # noqa: BLE001 - Outlines raises several kinds here
        raise PluginLoadError(f"an Outlines type as a parameter must be a regular "
                              f"expression: {_first_line(exc)}") from None
    return [item, WithJsonSchema({"type": "string", "pattern": f"^(?:{regex})$"})]


def _create_model(qualified_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    safe = "".join(c if c.isalnum() else "_" for c in qualified_name)
    try:
        return create_model(f"{safe}_args", __config__=_CONFIG, **fields)
    except Exception as exc:  # noqa: BLE001 - pydantic raises several kinds here
        raise PluginLoadError(
            f"cannot derive a schema for {qualified_name}: {_first_line(exc)}"
        ) from None


def _parameters_schema(model: type[BaseModel], qualified_name: str) -> dict[str, Any]:
    try:
        raw = model.model_json_schema(by_alias=True)
    except Exception as exc:  # noqa: BLE001 - see above
        raise PluginLoadError(
            f"cannot derive a schema for {qualified_name}: {_first_line(exc)}"
        ) from None
    schema = clean_schema(inline_refs(raw, qualified_name))
    return {
        "type": "object",
        "properties": schema.get("properties", {}),
        "required": schema.get("required", []),
        "additionalProperties": False,
    }


def _returns_schema(hints: Mapping[str, Any], qualified_name: str) -> dict[str, Any]:
    if "return" not in hints:
        return {}
    try:
        raw = TypeAdapter(pydantic_typeddicts(hints["return"])).json_schema(
            mode="serialization")
    except Exception as exc:  # noqa: BLE001 - see above
        raise PluginLoadError(
            f"cannot derive the return schema of {qualified_name}: {_first_line(exc)}"
        ) from None
    return clean_schema(inline_refs(raw, qualified_name))


def pydantic_typeddicts(annotation: Any) -> Any:
    """`annotation` with every `typing.TypedDict` class (which pydantic refuses before
    Python 3.12) rebuilt as a `typing_extensions.TypedDict` of the same keys, also inside
    `list[...]`, `dict[str, ...]` and unions, so a return type written with either works."""
    if typing_is_typeddict(annotation) and not isinstance(annotation, _TEXT_TYPEDDICT_META):
        hints = get_type_hints(annotation, include_extras=True)
        fields = {k: pydantic_typeddicts(v) for k, v in hints.items()}
        rebuilt: Any = TypedDict(annotation.__name__, fields,  # type: ignore[operator]
                                 total=annotation.__total__)
        rebuilt.__required_keys__ = annotation.__required_keys__
        rebuilt.__optional_keys__ = annotation.__optional_keys__
        return rebuilt
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is None or not args or origin is Annotated:
        return annotation
    converted = tuple(pydantic_typeddicts(a) for a in args)
    if converted == args:
        return annotation
    try:
        return annotation.copy_with(converted)  # typing generics (List, Union, Optional)
    except AttributeError:
        try:
            return origin[converted]  # builtin generics: list[...], dict[...]
        except TypeError:
            return annotation


def inline_refs(schema: dict[str, Any], qualified_name: str = "") -> dict[str, Any]:
    """Replace every `{"$ref": "#/$defs/X"}` by a copy of X, so the schema stands alone."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def resolve(node: Any, stack: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(x, stack) for x in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            name = ref.rsplit("/", 1)[-1]
            if not ref.startswith("#/$defs/") or name not in defs:
                raise PluginLoadError(f"{qualified_name}: unresolvable schema reference {ref}")
            if name in stack:
                raise PluginLoadError(f"{qualified_name}: recursive type {name} is not supported")
            target = resolve(defs[name], stack | {name})
            rest = {k: resolve(v, stack) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        return {k: resolve(v, stack) for k, v in node.items() if k != "$defs"}

    return resolve(schema, frozenset())


def clean_schema(node: Any, in_properties: bool = False) -> Any:
    """Drop pydantic's auto-generated `title`s: noise in prompts and grammars."""
    if isinstance(node, list):
        return [clean_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    if in_properties:  # keys are property names, values are schemas
        return {k: clean_schema(v) for k, v in node.items()}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in _SKIP_KEYS:
            out[key] = value
        else:
            out[key] = clean_schema(value, in_properties=key in ("properties", "patternProperties"))
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
