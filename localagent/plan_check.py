"""Checks a plan against a tool registry before anything runs, collecting every problem.

Why collect instead of stopping at the first: a planner that re-plans with the error, and a
person fixing a hand-written plan, both want the whole list at once, each with the exact
path into the plan's JSON (`subtasks[2].args.value1: unknown function "DemoPlugin.Totl";
did you mean DemoPlugin.Total?`).

Two questions, two rules:

- a *literal* against its parameter: the registry's (pydantic, lax) coercion decides
  (`literal_problem`, and the registry itself once every argument is a literal): a
  literal "2000" fits an integer parameter, "abc" does not;
- a *computed* value (a nested call's result, a reference, the piped input) against its
  parameter: `grammar.types.may_fit`, the rule the grammar's `fits` is the strict half
  of, decides from the producing function's return schema. It rejects only a result no
  value of which could pass (a list where a number is expected), so every plan a grammar
  admits passes; anything fits a string parameter, because the executor passes a result
  there as its text (`grammar.types.passed_as_text`), as Semantic Kernel's string
  context does.

A field access (`$1.total`, a call's `"field"`) is judged on the part of the result it
names (`grammar.types.field_schema`): a field the return schema does not declare, or an
index into an object, is a problem here; where the schema declares no keys (a plain
`dict`), the executor checks the field when the plan runs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from localagent.errors import InvalidArgumentsError
from localagent.grammar.types import field_schema, json_type, may_fit, value_types
from localagent.plan_nodes import (
    INPUT,
    Call,
    Ref,
    SequentialPlan,
    Step,
    TreePlan,
    Value,
    path_text,
)
from localagent.tools.registry import ToolRegistry, suggest
from localagent.tools.spec import ToolSpec

_ARTICLE = {"integer": "an integer", "array": "an array", "object": "an object", "null": "null"}


@dataclass
class _Scope:
    """What a call being checked can see: registry, limits, and the results before it."""

    registry: ToolRegistry
    names: list[str]
    max_depth: int
    produced: dict[str, str] = field(default_factory=dict)  # ref text -> producing function
    # ref text -> the field of its producer's result the step kept (`Step.field`)
    kept: dict[str, tuple[str | int, ...]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check_plan(
    plan: SequentialPlan | TreePlan, registry: ToolRegistry, *, max_depth: int = 4
) -> list[str]:
    """Every problem of `plan`, as `path: message` lines (empty when the plan is runnable)."""
    scope = _Scope(registry, [s.qualified_name for s in registry.specs()], max_depth)
    if isinstance(plan, TreePlan):
        check_call(plan.root, "root", scope)
        for path, ref in plan.root.refs():
            scope.problems.append(
                f"root.{path}: reference {ref} does not exist (a tree plan has no earlier results)"
            )
    else:
        _check_sequential(plan, scope)
    return scope.problems


def check_call(call: Call, path: str, scope: _Scope, depth: int = 1, piped: bool = False) -> None:
    """Check one call and everything nested in it; `piped`: `input` comes from the pipe."""
    if depth > scope.max_depth:
        scope.problems.append(
            f"{path}: nesting depth exceeds the limit of {scope.max_depth} calls"
        )
        return
    spec = _spec_or_problem(call.function, path, scope)
    for sub_path, child in call.children():
        check_call(child, f"{path}.{sub_path}", scope, depth + 1)
    if spec is None:
        return
    if call.field:
        _, why = field_schema(spec.returns, call.field)
        if why:
            scope.problems.append(f"{path}.field: {spec.qualified_name}'s result: {why}")
    params: dict[str, Any] = spec.parameters.get("properties", {})
    before = len(scope.problems)
    for name, arg in call.args.items():
        if name not in params and spec.parameters.get("additionalProperties") is not True:
            close = [p for p in params if _similar(p.lower(), name.lower())]
            hint = (f"; did you mean {' or '.join(close)}?" if close
                    else f" (it takes {', '.join(params) or 'no arguments'})")
            scope.problems.append(
                f"{path}.args.{name}: unknown argument of {spec.qualified_name}{hint}"
            )
        elif name in params:
            _check_arg(arg, params[name], spec, f"{path}.args.{name}", scope)
    for name in spec.parameters.get("required", []):
        if name not in call.args and not (piped and name == INPUT):
            scope.problems.append(
                f"{path}.args.{name}: missing required argument of {spec.qualified_name}"
            )
    if len(scope.problems) == before and not piped:
        _check_literals_with_registry(call, spec, path, scope)


def _check_sequential(plan: SequentialPlan, scope: _Scope) -> None:
    if not plan.steps:
        scope.problems.append("subtasks: the plan has no steps")
    edges = _dependency_edges(plan, scope.registry)
    scope.produced["$input"] = ""
    for i, step in enumerate(plan.steps):
        path = f"subtasks[{i}]"
        _check_step_refs(plan, i, edges, scope)
        piped = _takes_input(step, scope.registry)
        check_call(step.call, path, scope, piped=piped)
        if piped and scope.produced["$input"]:
            spec = scope.registry.spec(step.function)
            param = _resolve(spec.parameters["properties"][INPUT], spec.parameters)
            returns = _produced_schema(scope, "$input", ())
            what = f"the piped input ({scope.produced['$input']}) is"
            _check_computed(returns, param, what, spec, f"{path}.args.{INPUT}", scope)
        function = step.function if step.function in scope.registry else ""
        names = [f"${i + 1}", "$input"] + ([f"${step.output}"] if step.output else [])
        scope.produced.update({name: function for name in names})
        scope.kept.update({name: step.field for name in names})


def _check_step_refs(
    plan: SequentialPlan, index: int, edges: dict[int, set[int]], scope: _Scope
) -> None:
    """References must name results that exist before this step; forward ones may be cycles."""
    for rel, ref in plan.steps[index].call.refs():
        path = f"subtasks[{index}].{rel}"
        target = _ref_target(plan, index, ref)
        if target is None:
            where = (f"the plan has {len(plan.steps)} steps" if ref.step is not None
                     else f'no step outputs "{ref.name}"')
            scope.problems.append(f"{path}: reference {ref} does not exist ({where})")
        elif target >= index:
            cycle = _cycle_through(index, target, edges)
            if cycle:
                chain = " -> ".join(f"subtasks[{k}]" for k in cycle)
                scope.problems.append(f"{path}: reference {ref} forms a cycle: {chain}")
            else:
                scope.problems.append(
                    f"{path}: reference {ref} is not available yet "
                    f"(produced by subtasks[{target}], which runs later)"
                )


def _ref_target(plan: SequentialPlan, index: int, ref: Ref) -> int | None:
    """0-based index of the step whose output `ref` names, seen from step `index`; -1 for
    the plan's input, None if no step produces it."""
    if ref.step is not None:
        return ref.step - 1 if ref.step <= len(plan.steps) else None
    if ref.name == INPUT:
        return index - 1
    earlier = [k for k in range(index) if plan.steps[k].output == ref.name]
    if earlier:
        return earlier[-1]
    later = [k for k in range(index, len(plan.steps)) if plan.steps[k].output == ref.name]
    return later[0] if later else None


def _dependency_edges(plan: SequentialPlan, registry: ToolRegistry) -> dict[int, set[int]]:
    """Step -> steps whose output it reads (references, and the `input` pipe)."""
    edges: dict[int, set[int]] = {}
    for i, step in enumerate(plan.steps):
        targets = {_ref_target(plan, i, ref) for _, ref in step.call.refs()}
        if i > 0 and _takes_input(step, registry):
            targets.add(i - 1)
        edges[i] = {t for t in targets if t is not None and t >= 0}
    return edges


def _cycle_through(start: int, target: int, edges: dict[int, set[int]]) -> list[int] | None:
    """A dependency path start -> target -> ... -> start, if there is one."""
    stack: list[tuple[int, list[int]]] = [(target, [start, target])]
    seen: set[int] = set()
    while stack:
        node, route = stack.pop()
        if node == start:
            return route
        if node in seen:
            continue
        seen.add(node)
        stack.extend((nxt, route + [nxt]) for nxt in sorted(edges.get(node, ())))
    return None


def _takes_input(step: Step, registry: ToolRegistry) -> bool:
    """Whether the pipe fills this step's `input` (it has one and the step does not set it)."""
    if INPUT in step.args or step.function not in registry:
        return False
    return INPUT in registry.spec(step.function).parameters.get("properties", {})


def _spec_or_problem(function: str, path: str, scope: _Scope) -> ToolSpec | None:
    if function in scope.registry:
        return scope.registry.spec(function)
    close = suggest(function, scope.names, n=3)
    bare = function.rsplit(".", 1)[-1].lower()
    near = [c for c in close if _similar(c.rsplit(".", 1)[-1].lower(), bare)]
    close = near or close[:1]
    suffix = f"; did you mean {' or '.join(close)}?" if close else ""
    scope.problems.append(f'{path}: unknown function "{function}"{suffix}')
    return None


def _similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.75


def _check_arg(arg: Any, schema: dict[str, Any], spec: ToolSpec, path: str, scope: _Scope) -> None:
    """One argument against its parameter schema: literal values, computed values, lists."""
    schema = _resolve(schema, spec.parameters)
    if isinstance(arg, Call):
        if arg.function in scope.registry:
            returns, why = field_schema(scope.registry.spec(arg.function).returns, arg.field)
            what = f"{arg.function} returns" if not arg.field else (
                f"{arg.function}(...){path_text(arg.field)} is")
            if why is None:  # an undeclared field is the nested call's own problem
                _check_computed(returns, schema, what, spec, path, scope)
    elif isinstance(arg, Ref):
        function = scope.produced.get(f"${arg.name}")
        if function:
            kept = scope.kept.get(f"${arg.name}", ())
            returns, why = field_schema(scope.registry.spec(function).returns,
                                        kept + arg.path)
            if why:
                scope.problems.append(f"{path}: reference {arg} ({function}): {why}")
            else:
                _check_computed(returns, schema, f"{arg} ({function}) is", spec, path, scope)
    elif isinstance(arg, tuple):
        types = value_types(schema, spec.parameters)
        if types is not None and "array" not in types:
            scope.problems.append(f"{path}: expected {_describe(types)}, got a list")
            return
        items = _resolve(schema.get("items", {}), spec.parameters)
        for i, item in enumerate(arg):
            _check_arg(item, items, spec, f"{path}[{i}]", scope)
    else:
        value = arg.value if isinstance(arg, Value) else arg
        problem = literal_problem(value, schema, spec.parameters)
        if problem:
            scope.problems.append(f"{path}: {problem}")


def _produced_schema(scope: _Scope, name: str, path: tuple[str | int, ...]) -> dict[str, Any]:
    """The schema of what the reference `name` (a `$k`, `$input` or `$name`) yields at
    `path`: its producer's return schema, narrowed by the field its step kept."""
    returns = scope.registry.spec(scope.produced[name]).returns
    schema, _ = field_schema(returns, scope.kept.get(name, ()) + path)
    return schema


def _check_computed(
    returns: dict[str, Any], param: dict[str, Any], what: str, spec: ToolSpec, path: str,
    scope: _Scope,
) -> None:
    """A computed value (its producer returns `returns`) where `param` is expected."""
    if may_fit(param, returns, spec.parameters):
        return
    have, want = value_types(returns) or set(), value_types(param, spec.parameters) or set()
    if _describe(have) == _describe(want):  # the same types, but no value in common
        have_text, want_text = _values(returns), _values(param)
    else:
        have_text, want_text = _describe(have), _describe(want)
    scope.problems.append(
        f"{path}: {what} {have_text}, but {spec.qualified_name} expects {want_text} here"
    )


def _values(schema: dict[str, Any]) -> str:
    """`one of 'a', 'b'` for an enum or const schema (at most six values shown)."""
    values = schema.get("enum", [schema.get("const")])
    shown = ", ".join(map(repr, values[:6])) + (", ..." if len(values) > 6 else "")
    return f"one of {shown}" if len(values) != 1 else repr(values[0])


def _check_literals_with_registry(call: Call, spec: ToolSpec, path: str, scope: _Scope) -> None:
    """The registry is the authority on coercion: ask it when every argument is a literal."""
    if not all(_is_literal(arg) for arg in call.args.values()):
        return
    try:
        scope.registry.validate_args(spec.qualified_name, {k: _plain(v) for k, v in call.args.items()})
    except InvalidArgumentsError as exc:
        scope.problems.append(f"{path}.args: {exc}")


def _is_literal(arg: Any) -> bool:
    if isinstance(arg, tuple):
        return all(_is_literal(item) for item in arg)
    return not isinstance(arg, (Call, Ref))


def _plain(arg: Any) -> Any:
    if isinstance(arg, Value):
        return arg.value
    if isinstance(arg, tuple):
        return [_plain(item) for item in arg]
    return arg


# --- JSON schema helpers (the subset pydantic emits for tool signatures) --------------------


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
    return schema


def literal_problem(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> str | None:
    """Why a literal cannot fit `schema` under the registry's lax coercion, or None if it
    can (a value's question; a computed value's is `grammar.types.may_fit`)."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if any(literal_problem(value, b, root) is None for b in schema[key]):
                return None
            return f"expected {_describe(value_types(schema, root) or set())}, got {_shown(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"expected one of {', '.join(map(repr, schema['enum']))}, got {_shown(value)}"
    if "const" in schema and value != schema["const"]:
        return f"expected {schema['const']!r}, got {_shown(value)}"
    types = value_types(schema, root)
    if types is None or any(_fits_literal(value, t) for t in types):
        if isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                problem = literal_problem(item, schema["items"], root)
                if problem:
                    return f"item {i}: {problem}"
        return None
    return f"expected {_describe(types)}, got {_shown(value)}"


def _fits_literal(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind in ("integer", "number"):
        if isinstance(value, bool):
            return False
        if isinstance(value, str):
            return _parses(value, int if kind == "integer" else float)
        if kind == "integer":
            return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        return isinstance(value, (int, float))
    if kind == "boolean":
        return isinstance(value, bool) or value in (0, 1) or (
            isinstance(value, str) and value.lower() in {"true", "false", "yes", "no", "0", "1"}
        )
    return json_type(value) == kind


def _parses(text: str, kind: type) -> bool:
    try:
        kind(text.strip())
    except ValueError:
        return False
    return True


def _describe(types: set[str]) -> str:
    return " or ".join(_ARTICLE.get(t, f"a {t}") for t in sorted(types)) or "nothing"


def _shown(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{_ARTICLE.get(json_type(value), 'a ' + json_type(value))} ({text})"
