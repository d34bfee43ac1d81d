"""Build the four plan/step constraints from a set of tools, cached per (tools, format, options).

Each builder fills a template from the top-level `grammars/` folder with rules made from
the tools' argument schemas (`jsonlark`). A function name is always emitted together with
that function's own argument object, so a valid output cannot call `Diff` with `Total`'s
arguments. Everything that repeats is bounded (`Bounds`).
"""

from __future__ import annotations

import hashlib
import json
import string
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.covering import MAX_VALUES, CoveringRules, coverable
from localagent.grammar.jsonlark import (
    FIRST_CHAR,
    TEXT_CHAR,
    WIDE,
    Bounds,
    LarkRules,
    Schema,
    jtext,
    lit,
)
from localagent.grammar.typed_steps import CallRule, RefsFor, TypedSteps
from localagent.grammar.types import fits
from localagent.paths import GRAMMARS_DIR
from localagent.plan import INPUT
from localagent.tools.spec import ToolSpec

TEMPLATES = {
    "sequential": "sequential_plan.lark",
    "tree": "tree_plan.lark",
    "react": "react_step.lark",
    "tool_call": "tool_call_turn.lark",
}


@dataclass(frozen=True)
class CallFormat:
    """How one tool call is written in a tool-call turn. Default: Qwen2.5 / Hermes."""

    open: str = "<tool_call>\n"
    close: str = "\n</tool_call>"
    separator: str = "\n"
    name_key: str = "name"
    args_key: str = "arguments"


HERMES = CallFormat()
DEFAULT_BOUNDS = Bounds()
NO_LAST_STEP = "no function that may end the plan can be called"


@dataclass
class BuildStats:
    builds: int = 0
    cache_hits: int = 0
    by_format: dict[str, int] = field(default_factory=dict)


_STATS = BuildStats()
_CACHE: dict[str, Constraint] = {}
_LOCK = threading.Lock()


def build_stats() -> BuildStats:
    return BuildStats(_STATS.builds, _STATS.cache_hits, dict(_STATS.by_format))


def tools_hash(tools: Sequence[ToolSpec]) -> str:
    """Identifies a tool set by content (order-insensitive)."""
    joined = "\n".join(sorted(t.content_hash for t in tools))
    return hashlib.sha256(joined.encode()).hexdigest()


def _cached(fmt: str, tools: Sequence[ToolSpec], options: dict, builder) -> Constraint:
    if not tools:
        raise ConstraintError(f"cannot build a {fmt} constraint for an empty tool set")
    names = [t.qualified_name for t in tools]
    if len(set(names)) != len(names):
        raise ConstraintError("duplicate function names in the tool set")
    key = f"{fmt}\0{tools_hash(tools)}\0{json.dumps(options, sort_keys=True, default=str)}"
    with _LOCK:
        if key in _CACHE:
            _STATS.cache_hits += 1
            return _CACHE[key]
    source = builder()
    constraint = Constraint(kind="lark", source=source, name=f"{fmt.replace('_', '-')}")
    with _LOCK:
        _CACHE[key] = constraint
        _STATS.builds += 1
        _STATS.by_format[fmt] = _STATS.by_format.get(fmt, 0) + 1
    return constraint


def _render(fmt: str, **values: str) -> str:
    text = (GRAMMARS_DIR / TEMPLATES[fmt]).read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    try:
        return string.Template(body).substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConstraintError(f"grammar template {TEMPLATES[fmt]} is broken: {exc}") from exc


def _args_rules(rules: LarkRules, tools: Sequence[ToolSpec], prefix: str,
                head) -> list[str]:
    """One rule per tool: `head(tool)` literal followed by the tool's own argument object."""
    names = []
    for i, tool in enumerate(tools):
        rules.root = tool.parameters
        args = rules.value(tool.parameters, 0, None, "")
        if args is None:  # e.g. an enum the planner narrowed to nothing: not callable now
            continue
        names.append(rules.define(f"{prefix}_{i}", head(tool, args)))
    return names


def _bounded_text(n: int) -> str:
    """One line of 1..n printable characters, not starting with a space."""
    return f"/{FIRST_CHAR}{TEXT_CHAR}{{0,{max(n - 1, 0)}}}/"


def sequential_plan(tools: Sequence[ToolSpec], *, max_steps: int = 6,
                    reasoning_chars: int = 0, refs: str = "none", reasoning_steps: bool = False,
                    roots: Sequence[str] | None = None, pipe: bool = False,
                    must: Sequence[str] = (), inputs: Sequence[str] | None = None,
                    ordered: bool = False, distinct: bool = False,
                    needs: Sequence[Sequence[str]] = (), typed: bool = False,
                    bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """`{"input": str, "subtasks": [{"function", "args"}, ...]}`, optionally after a reasoning field.

    `refs`: where an argument may be a step reference (`"$1"`, the output of step 1) in
    place of a value of its type: "none"; "any" (`$1`..`$max_steps` in every step, so a
    forward reference parses and only the plan check rejects it); "backward" (step k may
    name only `$1`..`$(k-1)`: forward references cannot be written, at the price of one
    call rule per tool and step). `roots`: the qualified names the last step may call
    (None: any function). `pipe`: after the first step, `input` is never written: the pipe
    gives each step the previous step's output (one call rule per tool and step).
    `must`: a recipe: the qualified names the plan calls in this order; with it, every
    tool is called at most once (a rule per step and state). `inputs`: the values the
    plan's "input" (its starting text) may take (None: any bounded string).
    `ordered` (with backward refs): the step references of one call are distinct and
    ascending (`subtract("$1", "$2")`, never `"$2", "$1"` or `"$1", "$1"`), for a function
    whose arguments are all required and plain values (`_ordered_args`). `distinct`:
    only distinct, in any order.
    `needs`: groups of qualified names; the plan calls at least one function of each
    group (`_needed_steps`; not with `must`).
    `typed` (with backward refs, not with `must`): a `$k` stands only where step k's
    result fits the argument (grammar/typed_steps.py).
    """
    if refs not in ("none", "any", "backward"):
        raise ConstraintError(f"refs must be none, any or backward, got {refs!r}")
    last = None if roots is None else {i for i, t in enumerate(tools)
                                       if t.qualified_name in roots}
    options = {"max_steps": max_steps, "reasoning": reasoning_chars, "bounds": bounds,
               "refs": refs, "steps": reasoning_steps,
               "roots": None if roots is None else sorted(roots), "pipe": pipe,
               "must": list(must), "inputs": None if inputs is None else list(inputs),
               "ordered": ordered and refs == "backward",
               "distinct": distinct and refs == "backward",
               "needs": [sorted(g) for g in needs],
               "typed": typed and refs == "backward" and not must}
    index = {t.qualified_name: i for i, t in enumerate(tools)}
    if any(name not in index for name in must):
        raise ConstraintError(f"must names functions not offered: {list(must)}")
    needed = [index[name] for name in must]
    groups = [{index[n] for n in group if n in index} for group in needs]
    if any(not g for g in groups):
        raise ConstraintError(f"a group of needed functions has none offered: {list(needs)}")

    order = ("ascending" if options["ordered"] else "distinct" if options["distinct"] else "")

    def build() -> str:
        rules = LarkRules(bounds)
        text = steps_reasoning(rules, tools, max_steps) if reasoning_steps else (
            rules.string(reasoning_chars, 1) if reasoning_chars else "")
        reasoning = f'"\\"reasoning\\": " {text} ", "' if text else ""
        if options["typed"]:
            tools_at = [_piped_after(tools, 2) if pipe else tools] * max_steps
            tools_at[0] = tools
            call = _typed_call(rules, tools_at, order)
            subtasks = TypedSteps(rules, tools_at, call, last=last, groups=groups).build()
        elif refs == "backward" or pipe or needed or groups:
            ref_rule = _ref_rules(rules)
            steps = [_step_calls(rules, _piped_after(tools, k) if pipe else tools, k,
                                 range(1, k if refs == "backward" else max_steps + 1)
                                 if refs != "none" else (), ref_rule, last, order=order)
                     for k in range(1, max_steps + 1)]
            subtasks = (_recipe_steps(rules, steps, needed, last) if needed
                        else _needed_steps(rules, steps, groups, last) if groups
                        else _unrolled_steps([(s.any, s.final) for s in steps]))
        else:
            call, final, _ = _step_calls(rules, tools, 1, range(1, max_steps + 1)
                                         if refs == "any" else (), _ref_rules(rules), last)
            if final is None:
                raise ConstraintError(NO_LAST_STEP)
            if max_steps == 1:
                subtasks = final
            elif final == call:
                subtasks = f'{call} (", " {call}){{0,{max_steps - 1}}}'
            else:
                subtasks = f'({call} ", "){{0,{max_steps - 1}}} {final}'
        start = (rules.string(bounds.max_text) if inputs is None else
                 rules.add("input", " | ".join(lit(jtext(v)) for v in dict.fromkeys(inputs))))
        return _render("sequential", reasoning=reasoning, input=start,
                       subtasks=subtasks, rules=rules.render())

    return _cached("sequential", tools, options, build)


STEP_ARGS = f"[\\x20\\x21\\x23-\\x27\\x2a-\\x5b\\x5d-\\x7e{WIDE}]"  # no quote, backslash, parens


def steps_reasoning(rules: LarkRules, tools: Sequence[ToolSpec], max_steps: int = 6) -> str:
    """A JSON string holding a numbered list of calls of real functions:
    `"1. P.F(free args); 2. P.G(step 1)"`, at most `max_steps` steps.

    Why: free-text reasoning let a 0.5B model list functions that do not exist or repeat
    steps until the length cap; here every step names a real function and the list ends.
    """
    names = rules.add("fname", " | ".join(lit(t.qualified_name) for t in tools))
    args = f"/{STEP_ARGS}{{0,60}}/"
    steps = [rules.add("rstep", f'{lit(f"{k}. ")} {names} "(" {args} ")"')
             for k in range(1, max_steps + 1)]
    text = ""
    for rule in reversed(steps[1:]):
        text = f'("; " {rule} {text})?'.replace(" )", ")")
    return rules.add("steps", f'"\\"" {steps[0]} {text} "\\""')


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


def _ref_rules(rules: LarkRules) -> Callable[[Sequence[int]], str | None]:
    """A maker of the rule admitting the step references `"$j"` for j in the steps it is
    given (None for none), one rule per distinct list."""
    made: dict[tuple[int, ...], str | None] = {}

    def ref_rule(steps: Sequence[int]) -> str | None:
        key = tuple(steps)
        if key not in made:
            made[key] = rules.add("ref", " | ".join(lit(jtext(f"${j}")) for j in key)) \
                if key else None
        return made[key]

    return ref_rule


def _call_rule(rules: LarkRules, tool: ToolSpec, name: str, step: int,
               refs: Callable[[Schema], Sequence[int]] | None,
               ref_rule: Callable[[Sequence[int]], str | None], tag: str,
               order: str = "") -> str | None:
    """`tool`'s call rule at `step`: its own arguments, where a reference to one of the
    steps `refs(schema)` gives may stand in for a value (None: no reference); `order`:
    "ascending" or "distinct" references within the call (`_ordered_args`). None when
    its arguments admit no value (an enum narrowed to nothing, no reference allowed)."""
    params = tool.parameters

    def hook(schema: Schema) -> str | None:
        return None if schema is params or refs is None else ref_rule(refs(schema))

    rules.root = params
    args = (_ordered_args(rules, params, step, refs, ascending=order == "ascending")
            if order and refs else None) or rules.value(params, 0, hook if refs else None,
                                                        tag if refs else "")
    if args is None:
        return None
    return rules.add(name, _call_object("function", tool.qualified_name, "args", args))


class StepRules(NamedTuple):
    """The rules of one step: any call, a call that may end the plan (None: none may),
    and each callable tool's own call rule by its index."""

    any: str
    final: str | None
    calls: dict[int, str]


def _step_calls(rules: LarkRules, tools: Sequence[ToolSpec], step: int,
                ref_steps: Sequence[int], ref_rule: Callable[[Sequence[int]], str | None],
                last: set[int] | None = None, *, order: str = "") -> StepRules:
    """Rules for one subtask, and for the plan's last subtask: any tool with its own
    arguments (the last one: only the tools in `last`, when given), a reference to one of
    `ref_steps` wherever a value may stand (`order`: distinct, and "ascending" or only
    "distinct", within the call)."""
    heads, finals, calls = [], [], {}
    refs = (lambda schema: ref_steps) if ref_steps else None
    for i, tool in enumerate(tools):
        call = _call_rule(rules, tool, f"call{step}_{i}", step, refs, ref_rule, f"s{step}",
                          order)
        if call is None:  # e.g. an enum narrowed to nothing and no reference allowed here
            continue
        heads.append(call)
        calls[i] = call
        if last is None or i in last:
            finals.append(call)
    if not heads:
        raise ConstraintError(f"no function can be called at step {step}: every argument "
                              "schema admits no value")
    rule = rules.add(f"step{step}", " | ".join(heads))
    if finals == heads:
        return StepRules(rule, rule, calls)
    return StepRules(rule, rules.add(f"last{step}", " | ".join(finals)) if finals else None,
                     calls)


_SCALAR = ("number", "integer", "string", "boolean")


def _ordered_args(rules: LarkRules, params: Schema, step: int,
                  refs: Callable[[Schema], Sequence[int]] | None = None,
                  ascending: bool = True) -> str | None:
    """The argument object of step `step` in which the step references (`"$1"` ..
    `"$(step-1)"`; with `refs`, the ones it gives for an argument's schema) are distinct
    and (`ascending`) in ascending argument order; None where the function's arguments
    are not all required plain values (the ordinary rules apply there).

    Why: the default model wrote `subtract("$2", "$1")` after looking up Ashes of Meridian
    and then The Copper Orchard (-241 pages), `divide("$2", "$1")` for Jupiter against
    Earth, and `divide("$1", "$1")` for Dev's monthly salary. Its lookups come in the
    goal's order, and the goal's order is the operands' order ("more ... than").
    Distinct alone (`distinct`) keeps `add("$2", "$1")`, which `ascending` turned into
    `add("$2", 1)` for the moons of Uranus and Neptune.
    """
    props: dict[str, Schema] = params.get("properties") or {}
    keys = list(props)
    if (not keys or set(params.get("required", [])) != set(keys)
            or not all(isinstance(props[k], dict) and ("enum" in props[k] or (
                props[k].get("type") in _SCALAR and not {"anyOf", "oneOf", "allOf", "$ref"}
                & set(props[k]))) for k in keys)):
        return None
    plain = {k: rules.value(props[k], 1, None, "") for k in keys}
    memo: dict[tuple[int, frozenset[int]], str | None] = {}

    def tail(idx: int, used: frozenset[int]) -> str | None:
        """Arguments keys[idx:] when the references so far are `used`."""
        if (idx, used) not in memo:
            name = lit(jtext(keys[idx]) + ": ")
            choices = [(plain[keys[idx]], used)] if plain[keys[idx]] else []
            allowed = refs(props[keys[idx]]) if refs else range(1, step)
            floor = max(used, default=0) if ascending else 0
            choices += [(lit(jtext(f"${j}")), used | {j}) for j in allowed
                        if j > floor and j not in used]
            alts = []
            for value, after in choices:
                rest = tail(idx + 1, after) if idx + 1 < len(keys) else ""
                if rest is not None:
                    alts.append(f'{name} {value} ", " {rest}' if rest else f"{name} {value}")
            memo[idx, used] = rules.add("oargs", " | ".join(alts)) if alts else None
        return memo[idx, used]

    first = tail(0, frozenset())
    return rules.add("ordered", f'"{{" {first} "}}"') if first else None


def _recipe_steps(rules: LarkRules, steps: list[StepRules], order: Sequence[int],
                  last: set[int] | None) -> str:
    """The subtask list of a recipe: each tool called at most once, every tool of `order`
    called, in that order; the others where the model puts them. The rule for "step k
    onward" branches on the state (how many of `order` are called, which others are).
    A plan may end only once all of `order` are called (and, with `last`, on `last`)."""
    memo: dict[tuple[int, int, frozenset[int]], str | None] = {}
    required = list(order)

    def tail(k: int, done: int, used: frozenset[int]) -> str | None:
        key = (k, done, used)
        if key not in memo:
            memo[key] = None
            step, alts = steps[k], []
            for i, call in step.calls.items():
                if i in used or (i in required and required[done:done + 1] != [i]):
                    continue  # called already, or a required tool out of its turn
                after = (done + 1, used) if i in required else (done, used | {i})
                if after[0] == len(required) and (last is None or i in last):
                    alts.append(call)
                if k + 1 < len(steps) and len(required) - after[0] < len(steps) - k:
                    rest = tail(k + 1, *after)
                    if rest:
                        alts.append(f'{call} ", " {rest}')
            memo[key] = rules.add(f"recipe{k + 1}", " | ".join(alts)) if alts else None
        return memo[key]

    first = tail(0, 0, frozenset())
    if first is None:
        raise ConstraintError(f"no plan of at most {len(steps)} steps calls the required "
                              "functions in order")
    return first


def _needed_steps(rules: LarkRules, steps: list[StepRules], groups: Sequence[set[int]],
                  last: set[int] | None) -> str:
    """The subtask list when each group of tools must have one of its tools called (the
    `nouns` technique): the rule for "step k onward" branches on the groups covered so
    far (a bit mask); a plan may end only once all are (and, with `last`, on `last`)."""
    full = (1 << len(groups)) - 1
    memo: dict[tuple[int, int], str | None] = {}

    def covers(i: int) -> int:
        return sum(1 << g for g, group in enumerate(groups) if i in group)

    def tail(k: int, done: int) -> str | None:
        if (k, done) not in memo:
            memo[k, done] = None
            by_after: dict[int, list[int]] = {}
            for i in steps[k].calls:
                by_after.setdefault(done | covers(i), []).append(i)
            alts = []
            for after, tools in by_after.items():
                ends = [steps[k].calls[i] for i in tools if last is None or i in last]
                if after == full and ends:
                    alts.append(" | ".join(ends))
                rest = tail(k + 1, after) if k + 1 < len(steps) else None
                if rest:
                    calls = " | ".join(steps[k].calls[i] for i in tools)
                    alts.append(f'({calls}) ", " {rest}')
            memo[k, done] = rules.add(f"need{k + 1}", " | ".join(alts)) if alts else None
        return memo[k, done]

    first = tail(0, 0)
    if first is None:
        raise ConstraintError(f"no plan of at most {len(steps)} steps calls a function of "
                              "each needed group")
    return first


def _unrolled_steps(steps: list[tuple[str, str | None]]) -> str:
    """`s1 (", " s2 (", " s3 ...)?)?`: step k uses its own rule, at most len(steps) steps.
    When the step that ends the plan has its own rule (the second of each pair; None: no
    plan may end there), `(l1 | s1 ", " (l2 | s2 ", " ...))`."""
    if all(rule == final for rule, final in steps):
        text = ""
        for rule, _ in reversed(steps[1:]):
            text = f'(", " {rule} {text})?'.replace(" )", ")")
        return f"{steps[0][0]} {text}".strip()
    tail: str | None = None
    for rule, final in reversed(steps):
        alts = [a for a in (final, f'{rule} ", " {tail}' if tail else None) if a]
        tail = f"({' | '.join(alts)})" if alts else None
    if tail is None:
        raise ConstraintError(NO_LAST_STEP)
    return tail


def tree_plan(tools: Sequence[ToolSpec], *, depth: int = 4, max_list: int = 4,
              reasoning_chars: int = 0, reasoning_steps: bool = False,
              cover: Sequence[str] = (), groups: Sequence[int] = (),
              roots: Sequence[str] | None = None,
              needs: Sequence[Sequence[str]] = (), shallow: Sequence[str] = (),
              numbers: Sequence[float] = (),
              bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """A call whose arguments may be calls (return type must fit), nested up to `depth`;
    optionally after a reasoning field (free text, or a list of real calls: `steps`).

    `cover`: enum values that the plan must each pass to some call (grammar/covering.py;
    ignored unless 1..4 values); `groups`: the group of each of them (values the goal
    lists together), each group combined in one call before meeting the others.
    `roots`: the qualified names the outermost call may have (None: any function).
    `needs`: groups of qualified names; the plan must call a function of each group (as
    many as fit with `cover` in the covering grammar's 4 items). `shallow`: functions
    (arithmetic) that may stand only in the outer two levels, and in the second only with
    a call among their arguments (in the covering grammar: only where they first use a
    named value or needed function; a stated number alone does not count, or
    `multiply(GetSalary(Dev), 12)` would repeat a lookup the plan already made).
    `numbers`: numbers the plan must each pass to some call (covering items after `cover`,
    before `needs`).
    """
    if depth < 1:
        raise ConstraintError("tree depth must be at least 1")
    cover = tuple(cover) if coverable(cover) else ()
    numbers = tuple(numbers)[:max(0, MAX_VALUES - len(cover))]
    needs = tuple(tuple(sorted(n)) for n in needs)[:max(0, MAX_VALUES - len(cover)
                                                        - len(numbers))]
    root_names = None if roots is None else tuple(sorted(roots))
    options = {"depth": depth, "max_list": max_list, "reasoning": reasoning_chars,
               "bounds": bounds, "steps": reasoning_steps, "cover": cover,
               "groups": tuple(groups) if cover and len(groups) == len(cover) else (),
               "roots": root_names, "needs": needs,
               "shallow": tuple(sorted(shallow)), "numbers": numbers}
    bounds = Bounds(**{**vars(bounds), "max_items": min(bounds.max_items, max_list)})
    return _cached("tree", tools, options, lambda: _TreeBuilder(
        tools, depth, bounds, reasoning_chars, reasoning_steps, cover, root_names,
        options["groups"], needs, shallow, numbers).build())


class _TreeBuilder:
    """Unrolls the recursion: call rules per level, a call may stand at level L only where
    its return type fits and L <= depth."""

    def __init__(self, tools: Sequence[ToolSpec], depth: int, bounds: Bounds,
                 reasoning_chars: int, reasoning_steps: bool = False,
                 cover: Sequence[str] = (), roots: Sequence[str] | None = None,
                 groups: Sequence[int] = (),
                 needs: Sequence[Sequence[str]] = (), shallow: Sequence[str] = (),
                 numbers: Sequence[float] = ()) -> None:
        self.tools, self.depth, self.reasoning = list(tools), depth, reasoning_chars
        self.shallow = {i for i, t in enumerate(self.tools) if t.qualified_name in shallow}
        self.steps, self.cover = reasoning_steps, tuple(cover)
        self.groups, self.needs, self.numbers = tuple(groups), tuple(needs), tuple(numbers)
        self.roots = [i for i, t in enumerate(self.tools)
                      if roots is None or t.qualified_name in roots]
        self.rules = LarkRules(bounds)
        self._calls: dict[tuple[int, int], str | None] = {}
        self._fits: dict[tuple[int, str, int | None], str | None] = {}

    def build(self) -> str:
        if self.cover or self.needs or self.numbers:
            calls = CoveringRules(self, self.cover, groups=self.groups, needs=self.needs,
                                  numbers=self.numbers).roots(self.roots)
            if not calls:
                raise ConstraintError("no plan can pass every named value and number "
                                      f"({', '.join(map(str, self.cover + self.numbers))}) "
                                      "to a call and call every needed function")
        else:
            calls = [c for c in (self._call(1, i) for i in self.roots) if c]
        if not calls:
            raise ConstraintError("no function can be called: every argument schema admits "
                                  "no value")
        root = self.rules.define("call_1", " | ".join(calls))
        text = steps_reasoning(self.rules, self.tools) if self.steps else (
            self.rules.string(self.reasoning, 1) if self.reasoning else "")
        start = (f'"{{\\"reasoning\\": " {text} ", \\"plan\\": " {root} "}}"'
                 if text else root)
        return _render("tree", start=start, rules=self.rules.render())

    def _call(self, level: int, i: int) -> str | None:
        """The rule for tool i at `level`, or None when its arguments admit no value here
        (an enum narrowed to nothing, with no call that fits at this depth)."""
        if (level, i) in self._calls:
            return self._calls[(level, i)]
        name = f"c{level}_{i}"
        self._calls[(level, i)] = name
        tool = self.tools[i]
        params = tool.parameters

        def hook(schema: Schema) -> str | None:
            return None if schema is params else self._fit_rule(level + 1, schema, params)

        self.rules.root = params
        every_required = set(params.get("required", [])) == set(params.get("properties") or {})
        if i in self.shallow and level >= 2 and every_required:
            args = self._args_with_a_call(level, i)
        else:
            args = self.rules.value(params, 0, hook, f"L{level}")
        if args is None:
            self._calls[(level, i)] = None
            return None
        self.rules.define(name, _call_object("function", tool.qualified_name, "args", args))
        return name

    def _args_with_a_call(self, level: int, i: int) -> str | None:
        """Tool i's arguments with at least one call among them: the first call at
        argument k, literals before it (a nested `multiply(12, 100)` is arithmetic the
        plan need not do). Only for tools whose arguments are all required."""
        params = self.tools[i].parameters
        props: dict[str, Schema] = params.get("properties") or {}
        keys = list(props)
        plain = {k: self.rules.value(props[k], 1, None, "") for k in keys}
        calls = {k: self._fit_rule(level + 1, props[k], params) for k in keys}
        either = {k: " | ".join(x for x in (plain[k], calls[k]) if x) for k in keys}
        alts = []
        for j, key in enumerate(keys):
            parts = [plain[k] for k in keys[:j]] + [calls[key]] + [
                f"({either[k]})" if either[k] else None for k in keys[j + 1:]]
            if all(parts):
                body = ' ", " '.join(f"{lit(jtext(k) + ': ')} {p}" for k, p in zip(keys, parts))
                alts.append(f'"{{" {body} "}}"')
        return self.rules.add("shallow", " | ".join(alts)) if alts else None

    def _fit_rule(self, level: int, schema: Schema, root: Schema) -> str | None:
        """The calls that may stand at `level` as an argument of `schema`."""
        if level > self.depth:
            return None
        key = (level, json.dumps(schema, sort_keys=True, default=str))
        if key not in self._fits:
            self._fits[key] = None  # guard against self-reference while building
            callees = [i for i, t in enumerate(self.tools)
                       if fits(schema, t.returns, root)
                       and not (i in self.shallow and level > 2)]
            saved = self.rules.root
            names = [n for n in (self._call(level, i) for i in callees) if n]
            self.rules.root = saved
            self._fits[key] = self.rules.add("fit", " | ".join(names)) if names else None
        return self._fits[key]


def react_step(tools: Sequence[ToolSpec], *, final_only: bool = False,
               allowed_finals: Sequence[str] | None = None, allow_final: bool = True,
               bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """`Thought: ...` then `Action: <tool>` + `Action Input: <its args>`, or `Final Answer: ...`.

    `allowed_finals`: the only answers admitted (grounded answers); `allow_final=False`:
    the step must be an action.
    """
    if final_only and not allow_final:
        raise ConstraintError("a ReAct step cannot be final-only and forbid the final answer")
    options = {"final_only": final_only, "finals": list(allowed_finals or []), "bounds": bounds,
               "allow_final": allow_final}

    def build() -> str:
        rules = LarkRules(bounds)
        heads = [] if final_only else _args_rules(rules, tools, "act", lambda t, a: (
            f"{lit('Action: ' + t.qualified_name + chr(10) + 'Action Input: ')} {a}"))
        actions = f"action: {' | '.join(heads)}" if heads else ""
        if not heads and not final_only and not allow_final:
            raise ConstraintError("no function can be called and no final answer is allowed")
        if allowed_finals:
            final = " | ".join(lit(" ".join(a.split())) for a in allowed_finals)
        else:
            final = _bounded_text(bounds.max_text)
        return _render("react", thought=_bounded_text(bounds.max_text),
                       step="final" if final_only or not heads else (
                           "(action | final)" if allow_final else "action"),
                       actions=actions, final=final, rules=rules.render())

    return _cached("react", tools, options, build)


def tool_call_turn(tools: Sequence[ToolSpec], *, call_format: CallFormat = HERMES,
                   max_calls: int = 4, allow_answer: bool = True,
                   allowed_answers: Sequence[str] | None = None,
                   bounds: Bounds = DEFAULT_BOUNDS, bare: bool = False) -> Constraint:
    """One or more calls in `call_format` (parallel calls), or a plain-text answer
    (`allowed_answers`: only one of these texts, for grounded answers).

    `bare`: the same call objects may also be written without the wrapper, one per line,
    or in one ```json fence. Models trained on several tool formats often open a call that
    way unprompted; forcing the wrapper moves them off the distribution they were trained
    on, so with `bare` the grammar follows whichever opening the model takes and only the
    call objects themselves are constrained. `parse_tool_calls` after `wrap_bare_calls`
    reads all three."""
    options = {"format": vars(call_format), "max_calls": max_calls, "answer": allow_answer,
               "answers": list(allowed_answers or []), "bounds": bounds, "bare": bare}

    def build() -> str:
        rules = LarkRules(bounds)
        heads = _args_rules(rules, tools, "body", lambda t, a: _call_object(
            call_format.name_key, t.qualified_name, call_format.args_key, a))
        calls = _repeated("call", lit(call_format.separator), max_calls)
        if bare:
            lines = _repeated("body", lit("\n"), max_calls)
            calls = f"{calls} | {lines} | {lit('```json' + chr(10))} {lines} {lit(chr(10) + '```')}"
        # The answer holds no character a call is written with (the wrapper's first
        # character, braces, angle brackets, backticks): small models write a malformed
        # call as "text" (a bare JSON call, a ```json fence, ">{"name": ...}"), which
        # would end the loop with call text as the answer. So the two alternatives never
        # overlap, and a call can only be written as a call.
        answer = _answer_regex(bounds.max_text, call_format.open[:1])
        if allowed_answers:
            answer = " | ".join(lit(a) for a in allowed_answers)
        return _render("tool_call", start="calls | answer" if allow_answer else "calls",
                       calls=calls, open=lit(call_format.open), close=lit(call_format.close),
                       bodies=" | ".join(heads), answer=answer, rules=rules.render())

    return _cached("tool_call", tools, options, build)


def _repeated(item: str, separator: str, n: int) -> str:
    """`item`, then up to n - 1 more, each after `separator`."""
    return f"{item} ({separator} {item}){{0,{n - 1}}}" if n > 1 else item


def _answer_regex(max_text: int, call_open: str = "<") -> str:
    """A text answer of at most `max_text` characters with no call character in it."""
    banned = "&&[^" + _rx_escape(call_open or "<") + "<>{}`]]"
    first, rest = FIRST_CHAR[:-1] + banned, TEXT_CHAR[:-1] + banned
    return f"/{first}(?:{rest}|\\n){{0,{max_text - 1}}}/"


def text_answer(max_text: int = 400) -> Constraint:
    """Only a text answer, written as `tool_call_turn` admits it (the last turn)."""
    return Constraint(kind="lark", source="start: " + _answer_regex(max_text),
                      name="text-answer")


def _call_object(name_key: str, name: str, args_key: str, args_rule: str) -> str:
    """`{"<name_key>": "<name>", "<args_key>": <args>}` with the name fixed per tool."""
    head = "{" + jtext(name_key) + ": " + jtext(name) + ", " + jtext(args_key) + ": "
    return f"{lit(head)} {args_rule} {lit('}')}"


def _rx_escape(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[/" else ch
