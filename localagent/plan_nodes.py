"""Plan data: call nodes, references, sequential and tree plans.

One module of immutable pydantic models, because the planners produce plans, the executor
runs them, the CLI saves and loads them, the plan checker checks them, and the grammar
layer needs their shape. One frozen type per node (with a `kind` literal) describes a plan,
checks its structure and yields its JSON schema (`plan.plan_json_schema()`), so nothing
else has to agree on a second description. Reading and writing the JSON forms is
`localagent.plan`'s part, which re-exports everything here.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)
from typing_extensions import TypeAliasType

_PATH_PART = r"(?:\.[A-Za-z_][A-Za-z0-9_]*|\[(?:0|[1-9][0-9]{0,8})\])"
_REF_RE = re.compile(r"^(?:\$(?P<name>[A-Za-z_][A-Za-z0-9_]*|[1-9][0-9]*)|#E(?P<ev>[1-9][0-9]*))"
                     rf"(?P<path>{_PATH_PART}*)$")
_PATH_RE = re.compile(rf"^(?:[A-Za-z_][A-Za-z0-9_]*|\[(?:0|[1-9][0-9]{{0,8}})\]){_PATH_PART}*$")
_PART_RE = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""A step's output name (`"output": "total"`, referred to as `$total`)."""

INPUT = "input"
"""The context variable that carries a sequential plan's input and each step's output."""


FieldPath = tuple[Union[str, int], ...]  # noqa: UP007
"""A path into a result: keys (`"pages"`) and list indexes (`0`), outermost first."""


def parse_path(text: str) -> FieldPath | None:
    """The path `text` spells (`pages`, `owner.city`, `[0].price`, `items[2].name`; a
    leading dot is allowed), or None when it is not one. The empty text is the empty path."""
    body = text.removeprefix(".")
    if body == "":
        return ()
    if _PATH_RE.fullmatch(body) is None:
        return None
    return tuple(int(m[2]) if m[2] is not None else m[1] for m in _PART_RE.finditer(body))


def path_text(path: FieldPath, *, lead: bool = True) -> str:
    """The text of a path: `.owner.city`, `[0].price` (`lead=False`: `owner.city`)."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
    return text if lead else text.removeprefix(".")


class FieldAccessError(LookupError):
    """A path does not lead anywhere in a value: a missing key, an index past the end, a
    key into a list or an index into an object. The message names the step that failed."""


class MissingKeyError(FieldAccessError):
    """The path names a key an object lacks (what a field repair may choose again)."""


def follow(value: Any, path: FieldPath) -> Any:
    """The part of `value` at `path` (a mapping by key, a list by index); raises
    `FieldAccessError` saying where and why it does not exist."""
    done: list[str | int] = []
    for part in path:
        where = path_text(tuple(done)) or "the result"
        if isinstance(part, int) and not isinstance(value, bool):
            if not isinstance(value, (list, tuple)):
                raise FieldAccessError(f"{where} is {_kind(value)}, not a list: no [{part}]")
            if part >= len(value):
                raise FieldAccessError(f"{where} has {len(value)} items: no [{part}]")
            value = value[part]
        else:
            if not isinstance(value, dict):
                raise FieldAccessError(f"{where} is {_kind(value)}, not an object: "
                                       f"no field {part!r}")
            if part not in value:
                keys = ", ".join(map(str, list(value)[:8])) or "none"
                raise MissingKeyError(f"{where} has no field {part!r} (fields: {keys})")
            value = value[part]
        done.append(part)
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(
                type(value), type(value).__name__)


def _path_input(value: Any) -> Any:
    """A path given as text (`"items[0].price"`) or as a list of keys and indexes."""
    if isinstance(value, str):
        path = parse_path(value)
        if path is None:
            raise ValueError(f"{value!r} is not a field path (name, name.name, [0].name)")
        return path
    if isinstance(value, (list, tuple)):
        for part in value:
            if isinstance(part, bool) or not (
                    (isinstance(part, int) and part >= 0)
                    or (isinstance(part, str) and NAME_RE.fullmatch(part))):
                raise ValueError(f"{part!r} is not a field name or a list index")
    return value


class _Node(BaseModel):
    # Infinity and NaN are written as such (Python's json reads them back), not as null:
    # a plan saved and read again must mean the same
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    @model_serializer(mode="wrap")
    def _drop_empty_paths(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An empty `path` / `field` is not written: plans without field access keep the
        JSON form they always had."""
        data: dict[str, Any] = handler(self)
        for key in ("path", "field"):
            if key in data and not data[key]:
                del data[key]
        return data


class Ref(_Node):
    """A reference to an earlier result: `$3` (step 3's output), `#E3` (the same, ReWOO
    style), `$input` (the piped value) or `$name` (a step's named output)."""

    kind: Literal["ref"] = "ref"
    name: str
    sigil: Literal["$", "#E"] = "$"
    # A field of that result (`$1.pages`, `$2[0].price`); empty: the whole result.
    path: FieldPath = ()

    @field_validator("path", mode="before")
    @classmethod
    def _read_path(cls, value: Any) -> Any:
        return _path_input(value)

    @model_validator(mode="after")
    def _check_name(self) -> Ref:
        if Ref.parse(str(self)) is None:
            raise ValueError(f"{str(self)!r} is not a reference ($1, $name, $input or #E1)")
        return self

    @property
    def step(self) -> int | None:
        """The 1-based step number this reference names, or None for a variable."""
        if not self.name.isdigit():
            return None
        # int() refuses thousands of digits (sys.get_int_max_str_digits); so many are past
        # the steps of any plan
        return int(self.name) if len(self.name) <= 18 else sys.maxsize

    def __str__(self) -> str:
        return f"{self.sigil}{self.name}{path_text(self.path)}"

    @property
    def whole(self) -> str:
        """The reference without its path (`$1` for `$1.pages`): the result it reads."""
        return f"{self.sigil}{self.name}"

    @staticmethod
    def parse(text: str) -> Ref | None:
        """The reference `text` spells exactly (with a field path: `$1.pages`,
        `$2[0].price`, `#E1.owner.city`), or None if it is an ordinary string."""
        match = _REF_RE.fullmatch(text)  # not .match: "$" would also match before a "\n"
        if match is None:
            return None
        path = parse_path(match["path"]) or ()
        if match["ev"] is not None:
            return Ref.model_construct(kind="ref", name=match["ev"], sigil="#E", path=path)
        return Ref.model_construct(kind="ref", name=match["name"], sigil="$", path=path)


class Value(_Node):
    """A literal that the plain JSON form cannot carry: an object, or a string that would
    otherwise read as a reference."""

    kind: Literal["value"] = "value"
    value: Any


def _arg_tag(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "literal"))
    if isinstance(value, _Node):
        return str(value.kind)  # type: ignore[attr-defined]
    if isinstance(value, (list, tuple)):
        return "list"
    return "literal"


Scalar = Union[StrictBool, StrictInt, StrictFloat, StrictStr, None]  # noqa: UP007

Arg = TypeAliasType(  # type: ignore[misc]
    "Arg",
    Annotated[
        Union[  # noqa: UP007 (a string forward reference cannot take part in `|`)
            Annotated["Call", Tag("call")],
            Annotated[Ref, Tag("ref")],
            Annotated[Value, Tag("value")],
            Annotated[tuple["Arg", ...], Tag("list")],  # type: ignore[misc]
            Annotated[Scalar, Tag("literal")],
        ],
        Discriminator(_arg_tag),
    ],
)
"""An argument: a JSON scalar, a nested call, a reference, a `Value`, or a list of these."""


class Call(_Node):
    """One function call; arguments may nest further calls, evaluated first."""

    kind: Literal["call"] = "call"
    function: str = Field(min_length=1)
    args: dict[str, Arg] = Field(default_factory=dict)
    # The value is this field of the function's result (`Book(...).pages`); empty: all.
    field: FieldPath = ()

    @field_validator("field", mode="before")
    @classmethod
    def _read_field(cls, value: Any) -> Any:
        return _path_input(value)

    def children(self) -> Iterator[tuple[str, Call]]:
        """(path relative to this call, nested call) for the direct sub-calls."""
        for name, arg in self.args.items():
            yield from _calls_in(arg, f"args.{name}")

    def refs(self) -> Iterator[tuple[str, Ref]]:
        """(relative path, reference) for every reference anywhere below this call."""
        for name, arg in self.args.items():
            yield from _refs_in(arg, f"args.{name}")

    def depth(self) -> int:
        """1 for a call whose arguments are all literals or references."""
        return 1 + max((child.depth() for _, child in self.children()), default=0)


class Step(_Node):
    """A sequential step: a call, and optionally a name under which its output is kept."""

    kind: Literal["step"] = "step"
    function: str = Field(min_length=1)
    args: dict[str, Arg] = Field(default_factory=dict)
    output: str | None = Field(default=None, pattern=NAME_RE.pattern)
    # The step's output is this field of the result (the plan's answer, on the last step).
    field: FieldPath = ()

    @field_validator("field", mode="before")
    @classmethod
    def _read_field(cls, value: Any) -> Any:
        return _path_input(value)

    @field_validator("output")
    @classmethod
    def _not_the_pipe(cls, value: str | None) -> str | None:
        # as the raw form says: `$input` is the piped value, no step's name
        if value == INPUT:
            raise ValueError(f"{value!r} is not a usable name (a-z, 0-9, _)")
        return value

    @property
    def call(self) -> Call:
        return Call(function=self.function, args=self.args, field=self.field)


class SequentialPlan(_Node):
    """Semantic Kernel BasicPlanner's plan: steps in order, each output piped to the next
    step's `input` argument (unless the step sets `input` itself)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              ser_json_inf_nan="constants")

    kind: Literal["sequential"] = "sequential"
    input: str = ""
    steps: tuple[Step, ...] = Field(alias="subtasks")

    def to_json(self, *, indent: int | None = 2) -> str:
        return _to_json(self, indent)


class TreePlan(_Node):
    """A single nested call (`Diff(Total(C, F), Total(A, E))`), evaluated bottom-up."""

    kind: Literal["tree"] = "tree"
    root: Call

    def to_json(self, *, indent: int | None = 2) -> str:
        return _to_json(self, indent)


Plan = Annotated[SequentialPlan | TreePlan, Field(discriminator="kind")]
"""Either kind of plan, told apart by `kind`."""


def _calls_in(arg: Any, path: str) -> Iterator[tuple[str, Call]]:
    if isinstance(arg, Call):
        yield path, arg
    elif isinstance(arg, tuple):
        for i, item in enumerate(arg):
            yield from _calls_in(item, f"{path}[{i}]")


def _refs_in(arg: Any, path: str) -> Iterator[tuple[str, Ref]]:
    if isinstance(arg, Ref):
        yield path, arg
    elif isinstance(arg, Call):
        for sub_path, ref in arg.refs():
            yield f"{path}.{sub_path}", ref
    elif isinstance(arg, tuple):
        for i, item in enumerate(arg):
            yield from _refs_in(item, f"{path}[{i}]")


def _to_json(plan: SequentialPlan | TreePlan, indent: int | None) -> str:
    return json.dumps(plan.model_dump(mode="json", by_alias=True), indent=indent)


Call.model_rebuild()
Step.model_rebuild()
SequentialPlan.model_rebuild()
TreePlan.model_rebuild()
