"""What the four format builders share: the build cache, template rendering, call rules.

Every builder (`sequential.py`, `tree.py`, `react.py`, `tool_call.py`) fills a template
from the top-level `grammars/` folder with rules made from the tools' argument schemas
(`jsonlark`), through `cached`, so a tool set, format and options build once per process.
A function name is always emitted together with that function's own argument object
(`call_object`, `args_rules`), so a valid output cannot call one function with another's
arguments. Everything that repeats is bounded (`Bounds`).
"""

from __future__ import annotations

import hashlib
import json
import string
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.constraint import Constraint
from localagent.errors import ConstraintError
from localagent.grammar.jsonlark import (
    FIRST_CHAR,
    TEXT_CHAR,
    WIDE,
    Bounds,
    LarkRules,
    jtext,
    lit,
)
from localagent.paths import GRAMMARS_DIR
from localagent.tools.spec import ToolSpec

TEMPLATES = {
    "sequential": "sequential_plan.lark",
    "tree": "tree_plan.lark",
    "expression": "expression_plan.lark",
    "react": "react_step.lark",
    "tool_call": "tool_call_turn.lark",
}
DEFAULT_BOUNDS = Bounds()


@dataclass(frozen=True)
class CallFormat:
    """How one tool call is written in a tool-call turn. Default: Qwen2.5 / Hermes.

    `open`/`close` wrap each call (the chat template's own form). `blocks`: the other ways
    the model opens its calls, each (open, separator, close) around a group of bare call
    objects. Why: Qwen2.5-Coder writes its calls in a ```json fence or as bare objects far
    more often than in the tags its template documents; a grammar that admits only the
    tags masks out the model's own first token, and greedy decoding then falls to a text
    answer (DESIGN.md section 2)."""

    open: str = "<tool_call>\n"
    close: str = "\n</tool_call>"
    separator: str = "\n"
    name_key: str = "name"
    args_key: str = "arguments"
    blocks: tuple[tuple[str, str, str], ...] = (("```json\n", "\n", "\n```"), ("", "\n", ""))


HERMES = CallFormat()


# --- the build cache ----------------------------------------------------------------------


@dataclass
class BuildStats:
    """Builds done and cache hits since the process started, and builds per format."""

    builds: int = 0
    cache_hits: int = 0
    by_format: dict[str, int] = field(default_factory=dict)


_STATS = BuildStats()
_CACHE: dict[str, Constraint] = {}
_LOCK = threading.Lock()


def build_stats() -> BuildStats:
    """A copy of the build counters."""
    return BuildStats(_STATS.builds, _STATS.cache_hits, dict(_STATS.by_format))


def tools_hash(tools: Sequence[ToolSpec]) -> str:
    """Identifies a tool set by content (order-insensitive)."""
    joined = "\n".join(sorted(t.content_hash for t in tools))
    return hashlib.sha256(joined.encode()).hexdigest()


def cached(fmt: str, tools: Sequence[ToolSpec], options: dict[str, Any],
           builder: Callable[[], str]) -> Constraint:
    """The constraint of format `fmt` for `tools` under `options` (every option that
    changes the grammar), built by `builder` (which returns the grammar text) on a miss.
    Raises `ConstraintError` for an empty tool set or duplicate function names."""
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


def grammar_problem(source: str) -> str | None:
    """Why llguidance cannot compile this Lark grammar (an unknown rule name, more symbols
    than it can hold), or None when it can. Costs one compile without a tokenizer."""
    import llguidance

    try:
        grammar = llguidance.LLMatcher.grammar_from_lark(source)
        message = llguidance.LLMatcher.validate_grammar(grammar)
    except BaseException as exc:  # noqa: BLE001 - llguidance panics surface as any error
        return f"{type(exc).__name__}: {exc}"
    return message or None


def render(fmt: str, **values: str) -> str:
    """Format `fmt`'s template with its `${placeholders}` filled (comment lines dropped)."""
    text = (GRAMMARS_DIR / TEMPLATES[fmt]).read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    try:
        return string.Template(body).substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConstraintError(f"grammar template {TEMPLATES[fmt]} is broken: {exc}") from exc


# --- rules more than one format writes ----------------------------------------------------

# The explicit refusal a plan format admits with `decline`: the pseudo-function `none`,
# called alone with no arguments, is the plan "no offered function reaches this goal". It
# sits where the model picks a function name, so choosing it is one decision among the
# real names rather than a separate question about the goal.
NO_PLAN_FUNCTION = "none"


def no_plan_call() -> str:
    """The rule of the refusal plan: `{"function": "none", "args": {}}`."""
    return lit("{" + jtext("function") + ": " + jtext(NO_PLAN_FUNCTION) + ", "
               + jtext("args") + ": {}}")


def call_object(name_key: str, name: str, args_key: str, args_rule: str,
                rules: LarkRules | None = None) -> str:
    """`{"<name_key>": "<name>", "<args_key>": <args>}` with the name fixed per tool; with
    `rules.pretty`, in the whitespace those rules admit."""
    if rules is not None and rules.pretty:
        return " ".join([rules.open_obj, rules.key(name_key), lit(jtext(name)), rules.comma,
                         rules.key(args_key), args_rule, rules.close_obj])
    head = "{" + jtext(name_key) + ": " + jtext(name) + ", " + jtext(args_key) + ": "
    return f"{lit(head)} {args_rule} {lit('}')}"


def args_rules(rules: LarkRules, tools: Sequence[ToolSpec], prefix: str,
               head: Callable[[ToolSpec, str], str]) -> list[str]:
    """One rule per callable tool, named `<prefix>_<index>`: `head(tool, args)`, where
    `args` is the rule of the tool's own argument object. A tool whose arguments admit
    no value (an enum narrowed to nothing) gets no rule."""
    names = []
    for i, tool in enumerate(tools):
        args = rules.value(tool.parameters, 0, None, "", root=tool.parameters)
        if args is None:
            continue
        names.append(rules.define(f"{prefix}_{i}", head(tool, args)))
    return names


def bounded_text(n: int) -> str:
    """One line of 1..n printable characters, not starting with a space."""
    return f"/{FIRST_CHAR}{TEXT_CHAR}{{0,{max(n - 1, 0)}}}/"


STEP_ARGS = f"[\\x20\\x21\\x23-\\x27\\x2a-\\x5b\\x5d-\\x7e{WIDE}]"  # no quote, backslash, parens


def steps_reasoning(rules: LarkRules, tools: Sequence[ToolSpec], max_steps: int = 6) -> str:
    """A JSON string holding a numbered list of calls of real functions:
    `"1. P.F(free args); 2. P.G(step 1)"`, at most `max_steps` steps (the `steps`
    reasoning of the sequential and tree formats).

    Unlike free-text reasoning, every step names an offered function and the list ends
    after `max_steps`, so the reasoning can neither invent functions nor run to the
    length cap repeating itself.
    """
    names = rules.add("fname", " | ".join(lit(t.qualified_name) for t in tools))
    args = f"/{STEP_ARGS}{{0,60}}/"
    steps = [rules.add("rstep", f'{lit(f"{k}. ")} {names} "(" {args} ")"')
             for k in range(1, max_steps + 1)]
    text = ""
    for rule in reversed(steps[1:]):
        text = f'("; " {rule} {text})?'.replace(" )", ")")
    return rules.add("steps", f'"\\"" {steps[0]} {text} "\\""')
