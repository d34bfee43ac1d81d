"""The sequential plan constraint: `{"input": ..., "subtasks": [call, ...]}`.

`sequential_plan` resolves its options against the tool list (`_Options`) and writes the
subtask list in the simplest form that can express them:

- `_repeated_subtasks`: one call rule repeated (no per-step differences);
- `_unrolled_subtasks`: one rule per step, when a step's admitted references or
  arguments depend on its position (backward references, the pipe);
- `_typed_subtasks`: one rule per step and state, where a state records which kind of
  result each earlier step produced (`typed_steps.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.common import (
    DEFAULT_BOUNDS,
    cached,
    call_object,
    grammar_problem,
    no_plan_call,
    render,
    steps_reasoning,
)
from localagent.grammar.fields import (
    FieldRules,
    RefItem,
    finish,
    ref_lark,
    ref_step,
    untyped_paths,
)
from localagent.grammar.jsonlark import Bounds, LarkRules, Schema, jtext, lit
from localagent.grammar.typed_steps import CallRule, RefsFor, TypedSteps
from localagent.plan_nodes import INPUT
from localagent.tools.spec import ToolSpec

RefRule = Callable[[Sequence[RefItem]], "str | None"]
"""Given step numbers (or `(step, path)`: a part of that result, `"$2[0].price"`), the rule
admitting a reference to any of them (None: none)."""


@dataclass(frozen=True)
class _Options:
    """`sequential_plan`'s options, resolved (`order` from `ordered` and `distinct`)."""

    max_steps: int
    reasoning_chars: int
    reasoning_steps: bool
    refs: str  # "none", "any" or "backward"
    pipe: bool
    order: str  # "ascending", "distinct" or "" (any), for references within one call
    typed: bool
    bounds: Bounds
    decline: bool = False


def sequential_plan(tools: Sequence[ToolSpec], *, max_steps: int = 6,
                    reasoning_chars: int = 0, refs: str = "none", reasoning_steps: bool = False,
                    pipe: bool = False, ordered: bool = False, distinct: bool = False,
                    typed: bool = False, decline: bool = False,
                    bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """`{"input": str, "subtasks": [{"function", "args"}, ...]}`, optionally after a reasoning field.

    `reasoning_chars`: a free-text reasoning field of at most this many characters first
    (0: none); `reasoning_steps`: a reasoning field that lists real calls instead
    (`steps_reasoning`). `refs`: where an argument may be a step reference (`"$1"`, the
    output of step 1) in place of a value of its type: "none"; "any" (`$1`..`$max_steps`
    in every step, so a forward reference parses and only the plan check rejects it);
    "backward" (step k may name only `$1`..`$(k-1)`: forward references cannot be
    written, at the price of one call rule per tool and step). `pipe`: after the first
    step, `input` is never written: the pipe gives each step the previous step's output
    (one call rule per tool and step).
    `ordered` (with backward refs): the step references of one call are distinct and
    ascending (`subtract("$1", "$2")`, never `"$2", "$1"` or `"$1", "$1"`), for a function
    whose arguments are all required and plain values (`_ordered_args`). `distinct`:
    only distinct, in any order.
    `typed` (with backward refs): a `$k` stands only where step k's result fits the
    argument (grammar/typed_steps.py).
    `decline`: the subtasks may instead be the one refusal call `{"function": "none",
    "args": {}}` (`common.no_plan_call`): no offered function reaches the goal.
    """
    if refs not in ("none", "any", "backward"):
        raise ConstraintError(f"refs must be none, any or backward, got {refs!r}")
    options = {"max_steps": max_steps, "reasoning": reasoning_chars, "bounds": bounds,
               "refs": refs, "steps": reasoning_steps, "pipe": pipe,
               "ordered": ordered and refs == "backward",
               "distinct": distinct and refs == "backward",
               "typed": typed and refs == "backward", "decline": decline}
    resolved = _Options(
        max_steps=max_steps, reasoning_chars=reasoning_chars,
        reasoning_steps=reasoning_steps, refs=refs, pipe=pipe,
        order="ascending" if options["ordered"] else "distinct" if options["distinct"] else "",
        typed=bool(options["typed"]), bounds=bounds, decline=decline)
    return cached("sequential", tools, options, lambda: _source(tools, resolved))


FIELDS_GROWTH = 8  # measured: 1.6x-4.8x over the structured suite's tools, 40x-55x on NESTFUL


def _source(tools: Sequence[ToolSpec], o: _Options) -> str:
    """The grammar text of a sequential plan. A typed grammar whose parts of results
    (`$1.total`) make it one llguidance cannot compile (past its symbol limit) is built
    again with references to whole results only, as before field references existed:
    a plan that cannot name a field beats a grammar that cannot be used. The same when
    the fields make the grammar more than FIELDS_GROWTH times larger: over some tool sets
    (NESTFUL's) they grow it 50-fold, to megabytes that take long to compile, or past the
    symbol limit where llguidance only fails once a tokenizer is given."""
    text = _build(tools, o, fields=True)
    if not o.typed:
        return text
    whole = _build(tools, o, fields=False)
    if len(text) > FIELDS_GROWTH * len(whole) or grammar_problem(text):
        return whole
    return text


def _build(tools: Sequence[ToolSpec], o: _Options, *, fields: bool) -> str:
    rules = FieldRules(o.bounds)
    text = steps_reasoning(rules, tools, o.max_steps) if o.reasoning_steps else (
        rules.string(o.reasoning_chars, 1) if o.reasoning_chars else "")
    reasoning = f'"\\"reasoning\\": " {text} ", "' if text else ""
    if o.typed:
        subtasks = _typed_subtasks(rules, tools, o, fields)
    elif o.refs == "backward" or o.pipe:
        subtasks = _unrolled_subtasks(rules, tools, o)
    else:
        subtasks = _repeated_subtasks(rules, tools, o)
    if o.decline:
        subtasks = f"({subtasks}) | {no_plan_call()}"
    return render("sequential", reasoning=reasoning, input=rules.string(o.bounds.max_text),
                  subtasks=subtasks, rules=rules.render())


def _repeated_subtasks(rules: LarkRules, tools: Sequence[ToolSpec], o: _Options) -> str:
    """Every step the same call rule (references, with "any", to every step); the last
    one may take a part of its result (`fields.finish`)."""
    call, final = _step_calls(rules, tools, 1, range(1, o.max_steps + 1)
                              if o.refs == "any" else (), _ref_rules(rules))
    if o.max_steps == 1:
        return final
    if final == call:
        return f'{call} (", " {call}){{0,{o.max_steps - 1}}}'
    return f'({call} ", "){{0,{o.max_steps - 1}}} {final}'


def _unrolled_subtasks(rules: LarkRules, tools: Sequence[ToolSpec], o: _Options) -> str:
    """One rule per step: its own references (backward: only earlier steps) and its tools
    (piped: without an optional `input`)."""
    ref_rule = _ref_rules(rules)
    return _unrolled_steps([
        _step_calls(rules, _piped_after(tools, k) if o.pipe else tools, k,
                    range(1, k if o.refs == "backward" else o.max_steps + 1)
                    if o.refs != "none" else (), ref_rule, order=o.order)
        for k in range(1, o.max_steps + 1)])


def _typed_subtasks(rules: LarkRules, tools: Sequence[ToolSpec], o: _Options,
                    fields: bool = True) -> str:
    """Backward references that stand only where the named step's result (or, with
    `fields`, a part of it) fits."""
    tools_at = [_piped_after(tools, 2) if o.pipe else tools] * o.max_steps
    tools_at[0] = tools
    call = _typed_call(rules, tools_at, o.order)
    return TypedSteps(rules, tools_at, call, fields=fields).build()


def _piped_after(tools: Sequence[ToolSpec], step: int) -> Sequence[ToolSpec]:
    """`tools` as step `step` sees them under `pipe`: from step 2 on, an optional `input`
    argument is gone, so the previous step's output is always what the step works on."""
    if step < 2:
        return tools
    out = []
    for tool in tools:
        props = tool.parameters.get("properties", {})
        if INPUT in props and INPUT not in tool.parameters.get("required", []):
            props = {k: v for k, v in props.items() if k != INPUT}
            tool = replace(tool, parameters={**tool.parameters, "properties": props})
        out.append(tool)
    return out


def _typed_call(rules: LarkRules, tools_at: Sequence[Sequence[ToolSpec]],
                order: str) -> CallRule:
    """The call rules `TypedSteps` asks for: tool i at step k, whose references may name
    only the steps `refs_for` gives (`order`: "ascending" or "distinct", `_ordered_args`;
    "": any)."""
    ref_rule = _ref_rules(rules)

    def call(k: int, i: int, refs_for: RefsFor, tag: str) -> str | None:
        tool = tools_at[k - 1][i]
        return _call_rule(rules, tool, f"call{k}_{i}", k,
                          lambda schema: refs_for(schema, tool.parameters), ref_rule, tag,
                          order)

    return call


def _ref_rules(rules: LarkRules) -> RefRule:
    """A maker of the rule admitting the step references `"$j"` for j in the steps it is
    given (None for none), one rule per distinct list."""
    made: dict[tuple[RefItem, ...], str | None] = {}

    def ref_rule(steps: Sequence[RefItem]) -> str | None:
        key = tuple(steps)
        if key not in made:
            made[key] = rules.add("ref", " | ".join(ref_lark(j) for j in key)) \
                if key else None
        return made[key]

    return ref_rule


def _call_rule(rules: LarkRules, tool: ToolSpec, name: str, step: int,
               refs: Callable[[Schema], Sequence[RefItem]] | None,
               ref_rule: RefRule, tag: str, order: str = "") -> str | None:
    """`tool`'s call rule at `step`: its own arguments, where a reference to one of the
    steps `refs(schema)` gives may stand in for a value (None: no reference); `order`:
    "ascending" or "distinct" references within the call (`_ordered_args`). None when
    its arguments admit no value (an enum narrowed to nothing, no reference allowed)."""
    params = tool.parameters

    def hook(schema: Schema) -> str | None:
        return None if schema is params or refs is None else ref_rule(refs(schema))

    args = (_ordered_args(rules, params, step, refs, ascending=order == "ascending")
            if order and refs else None) or rules.value(params, 0, hook if refs else None,
                                                        tag if refs else "", root=params)
    if args is None:
        return None
    rule = rules.add(name, call_object("function", tool.qualified_name, "args", args))
    if isinstance(rules, FieldRules):
        rules.remember(rule, tool, args)  # a final step may take a part (`finish`)
    return rule


def _step_calls(rules: LarkRules, tools: Sequence[ToolSpec], step: int,
                ref_steps: Sequence[int], ref_rule: RefRule, *,
                order: str = "") -> tuple[str, str]:
    """Rules for one subtask, and for the plan's last subtask (which may take a part of
    its result: `fields.finish`): any tool with its own arguments, a reference to one of
    `ref_steps` wherever a value may stand (`order`: distinct, and "ascending" or only
    "distinct", within the call)."""
    heads, finals = [], []
    items = [(j, p) if p else j for j in ref_steps for p in untyped_paths(tools)]
    refs = (lambda schema: items) if ref_steps else None
    for i, tool in enumerate(tools):
        call = _call_rule(rules, tool, f"call{step}_{i}", step, refs, ref_rule, f"s{step}",
                          order)
        if call is None:  # e.g. an enum narrowed to nothing and no reference allowed here
            continue
        heads.append(call)
        finals.append(finish(rules, call))
    if not heads:
        raise ConstraintError(f"no function can be called at step {step}: every argument "
                              "schema admits no value")
    rule = rules.add(f"step{step}", " | ".join(heads))
    if finals == heads:
        return rule, rule
    return rule, rules.add(f"last{step}", " | ".join(finals))


_SCALAR = ("number", "integer", "string", "boolean")


def _ordered_args(rules: LarkRules, params: Schema, step: int,
                  refs: Callable[[Schema], Sequence[RefItem]] | None = None,
                  ascending: bool = True) -> str | None:
    """The argument object of step `step` in which the step references (`"$1"` ..
    `"$(step-1)"`; with `refs`, the ones it gives for an argument's schema) are distinct
    and (`ascending`) in ascending argument order; None where the function's arguments
    are not all required plain values (the ordinary rules apply there).

    The contract: a plan looks its operands up in the order the goal names them, so an
    operation takes them in that order too ("how much more is X than Y": X is `$1`, and
    the plan writes `subtract("$1", "$2")`, never `subtract("$2", "$1")`), and never
    combines one result with itself (`divide("$1", "$1")`). With `ascending=False`
    (`distinct`) only the second holds, so `add("$2", "$1")` stays admitted: where the
    order does not matter, forcing it leads a model to write a literal instead.
    """
    props: dict[str, Schema] = params.get("properties") or {}
    keys = list(props)
    if (not keys or set(params.get("required", [])) != set(keys)
            or not all(isinstance(props[k], dict) and ("enum" in props[k] or (
                props[k].get("type") in _SCALAR and not {"anyOf", "oneOf", "allOf", "$ref"}
                & set(props[k]))) for k in keys)):
        return None
    plain = {k: rules.value(props[k], 1, None, "", root=params) for k in keys}
    memo: dict[tuple[int, frozenset[int]], str | None] = {}

    def tail(idx: int, used: frozenset[int]) -> str | None:
        """Arguments keys[idx:] when the references so far are `used`."""
        if (idx, used) not in memo:
            name = lit(jtext(keys[idx]) + ": ")
            choices = [(plain[keys[idx]], used)] if plain[keys[idx]] else []
            allowed = refs(props[keys[idx]]) if refs else range(1, step)
            # `used` holds k for a result taken whole and -k for a part of it, so the
            # states stay few: a part of a result (`$1.price`) may follow another part of
            # it (`$1.count`: parts differ), never the whole result or the other way round
            # (`divide("$1", "$1[0]")` combines a result with itself)
            steps = {abs(u) for u in used}
            floor = max(steps, default=0) if ascending else 0
            for item in allowed:
                k, part = ref_step(item), not isinstance(item, int)
                fresh = k > floor and k not in steps
                again = part and -k in used and k >= floor
                if fresh or again:
                    choices.append((ref_lark(item), used | {-k if part else k}))
            alts = []
            for value, after in choices:
                rest = tail(idx + 1, after) if idx + 1 < len(keys) else ""
                if rest is not None:
                    alts.append(f'{name} {value} ", " {rest}' if rest else f"{name} {value}")
            memo[idx, used] = rules.add("oargs", " | ".join(alts)) if alts else None
        return memo[idx, used]

    first = tail(0, frozenset())
    return rules.add("ordered", f'"{{" {first} "}}"') if first else None


def _unrolled_steps(steps: list[tuple[str, str]]) -> str:
    """`s1 (", " s2 (", " s3 ...)?)?`: step k uses its own rule, at most len(steps) steps.
    When the step that ends the plan has its own rule (the second of each pair),
    `(l1 | s1 ", " (l2 | s2 ", " ...))`."""
    if all(rule == final for rule, final in steps):
        text = ""
        for rule, _ in reversed(steps[1:]):
            text = f'(", " {rule} {text})?'.replace(" )", ")")
        return f"{steps[0][0]} {text}".strip()
    tail = ""
    for rule, final in reversed(steps):
        tail = f'({final} | {rule} ", " {tail})' if tail else f"({final})"
    return tail
