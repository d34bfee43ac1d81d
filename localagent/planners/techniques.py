"""Planning techniques that make small models plan better, each behind its own switch.

Why switches rather than always-on: a technique that helps one kind of goal can cost
another, so each is measured alone and combined (`scripts/bench_planners.py --techniques`)
and the defaults are chosen from those measurements. A `Techniques` value is the whole
configuration; its `label` names it in benchmark keys and reports. "default" is per
planner (`default_techniques`): what measured best for that planner within 2x the tokens.

A spec (`--techniques`, the config's `techniques`; `parse_spec`) is one of:

- `default`: each planner's own default (`PLANNER_DEFAULTS`);
- absolute: `plain` (all off), or the switches that are on, joined by `+` or `,`
  (`grounded+decline`, `reasoning+replan=2`); every planner gets exactly those;
- relative: only changes, each `+name` (on), `+name=N` (replan, vote) or `-name` (off),
  separated by commas or spaces (`+replan=2,-mentions`). Each planner gets its own default
  with the changes (`TechniqueChanges`); removing a switch that planner's default does not
  have on is an error, adding one it has is not.

| switch        | planners           | what it does                                              |
|---------------|--------------------|-----------------------------------------------------------|
| reasoning     | tree, sequential   | a short free-text "reasoning" field before the plan       |
| steps         | tree, sequential   | the reasoning is a numbered list of calls of real         |
|               |                    | functions (the grammar admits only their names)           |
| similar       | tree, sequential   | few-shot examples picked by embedding similarity (Chroma) |
|               |                    | from a library of solved plans, instead of fixed ones     |
| mentions      | tree, sequential,  | enum and number arguments may only take values the goal   |
|               | react, tools       | states (react, tools: or a result shows); otherwise they  |
|               |                    | must be looked up (a nested call, a $k, an earlier action)|
| grounded      | react, tools       | the final answer may only restate an observed value       |
| decline       | tools, tree,       | the model is first shown its own tool-calling prompt; if  |
|               | sequential, react  | its first token opens a call with probability < 0.3, the  |
|               |                    | run ends declined ("no offered tool fits", no answer)     |
|               |                    | (decline.py; thresholds per model: the catalog entry)     |
|               | tools              | also after the first turn, before it runs: when the goal  |
|               |                    | states under half its calls' required values, or not all  |
|               |                    | of them and P(call) < 0.9 (stated.py)                     |
|               | tree, sequential   | the grammar also admits the refusal plan (the pseudo-     |
|               |                    | function `none`, alone); writing it ends the run declined |
|               | react              | the first step may also be the Final Answer "none of the  |
|               |                    | tools can answer this": the run ends declined             |
| defaults      | tools              | an optional argument whose value neither the goal nor a   |
|               |                    | result states is left out: its default applies (stated.py)|
| fresh         | tools              | a call after the first must pass a value a result shows   |
|               |                    | or one the goal states that no earlier call passed (in    |
|               |                    | the first turn: its first call runs as the model chose);  |
|               |                    | a later turn with none answers instead (fresh.py)         |
| native        | tools              | the first turn is also written as the model writes it     |
|               |                    | alone (no grammar, no planner prompt); where its calls are |
|               |                    | valid and call the same functions as the constrained      |
|               |                    | turn, its values fill the constrained turn's arguments;   |
|               |                    | where they share no function and the goal states more of  |
|               |                    | its values, its calls run (native.py, tool_calling.agreed)|
| values        | tree               | the grammar admits only plans passing each enum value the |
|               |                    | goal writes verbatim to a call; values listed with marks  |
|               |                    | only ("C, F", "C、F") are combined in one call first      |
|               | react, tools       | no answer before each of those values reached a call      |
| numbers       | tree               | with mentions: every number the goal states ("12 equal    |
|               |                    | parts", "a 250 km trip") is passed to some call           |
| shallow       | tree               | arithmetic only in a plan's outer two levels, the second  |
|               |                    | with a call among its arguments (nesting.py)              |
| compact       | tree, sequential   | the real task's functions written as one signature line,  |
|               |                    | exactly as in the examples, not as the full manual        |
| expression    | tree               | the plan is written as one call expression,               |
|               |                    | `P.F(a=P.G(x="C"))` (about half the JSON's tokens), under |
|               |                    | the same typed nesting (grammar/expression.py); no        |
|               |                    | values, shallow, numbers or reasoning with it             |
| ordered       | sequential         | with backrefs: one call's step references are distinct and |
|               |                    | ascending (`subtract($1, $2)`, not `$2, $1` or `$1, $1`)   |
| distinct      | sequential         | with backrefs: one call's step references are distinct     |
|               |                    | (`divide($1, 12)`, not `$1, $1`), in any order            |
| typed         | sequential         | with backrefs: a `$k` stands only where step k's result   |
|               |                    | fits the argument, as a nested call in a tree plan        |
|               |                    | (grammar/typed_steps.py)                                  |
| backrefs      | sequential         | the grammar admits only backward step references ($1..)   |
| pipe          | sequential         | after the first step, `input` is never a literal: it comes |
|               |                    | from the pipe (or a $k), not retyped from the goal        |
| instruct      | tools              | the planner's system text (when to call, conditions,      |
|               |                    | when to answer) instead of the chat template's default    |
| tags          | tools              | calls only in the chat template's `<tool_call>` tags (the |
|               |                    | turn grammar admits no ```json fence or bare object)      |
| observe       | tools              | when a result is a record, the answer is the value the    |
|               |                    | model picks seeing the goal and the results alone         |
|               |                    | (planners/observe.py; plan planners always do this)       |
| replan=N      | tree, sequential   | after a failed execution, plan again with the error, N x  |
| vote=K        | tree, sequential   | sample K plans, execute them, answer by majority; with a  |
|               |                    | side-effect function offered, only the plan most samples  |
|               |                    | wrote runs (plan_runner.py)                               |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import Any

from localagent.errors import UsageError


@dataclass(frozen=True)
class Techniques:
    """Which techniques a planner uses; `Techniques.plain()` turns all off.

    `Techniques()` is `mentions+backrefs`; each planner's own default is in
    `PLANNER_DEFAULTS`, chosen from measurements on goals over tools no prompt example
    shows (docs/BENCHMARKS.md, "Planning techniques"): mentions gained the most (+8 points for
    the tree planner at 1.3x tokens), backrefs removed every forward-reference failure of
    the sequential planner; re-planning gained nothing (+0 points: the corrected plans
    failed too), free-text reasoning and grounded ReAct answers lost ground on the default
    model, and vote=3 costs about 3x the tokens (over the 2x budget).
    """

    reasoning: bool = False
    steps: bool = False
    similar: bool = False
    mentions: bool = True
    grounded: bool = False
    decline: bool = False
    native: bool = False
    defaults: bool = False
    fresh: bool = False
    values: bool = False
    shallow: bool = False
    numbers: bool = False
    ordered: bool = False
    distinct: bool = False
    typed: bool = False
    compact: bool = False
    expression: bool = False
    backrefs: bool = True
    pipe: bool = False
    instruct: bool = False
    tags: bool = False
    observe: bool = False
    replan: int = 0
    vote: int = 1

    def __post_init__(self) -> None:
        if self.replan < 0 or self.replan > 5:
            raise UsageError(f"replan must be between 0 and 5, got {self.replan}")
        if self.vote < 1 or self.vote > 9:
            raise UsageError(f"vote must be between 1 and 9, got {self.vote}")

    @staticmethod
    def plain() -> Techniques:
        """Every technique off: the plain planner the techniques are measured against."""
        return Techniques(reasoning=False, steps=False, similar=False, mentions=False,
                          grounded=False, decline=False, native=False, defaults=False,
                          fresh=False, values=False, shallow=False, numbers=False,
                          ordered=False, distinct=False, typed=False, compact=False,
                          expression=False, backrefs=False, pipe=False, instruct=False,
                          tags=False, observe=False, replan=0, vote=1)

    @property
    def shows_reasoning(self) -> bool:
        """Whether a plan starts with a reasoning field (free text or steps)."""
        return self.reasoning or self.steps

    @property
    def label(self) -> str:
        """`plain`, or the switches that are on joined by `+` (`reasoning+replan=2`)."""
        plain = Techniques.plain()
        on = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == getattr(plain, f.name):
                continue
            on.append(f.name if isinstance(value, bool) else f"{f.name}={value}")
        return "+".join(on) or "plain"

    @staticmethod
    def parse(text: str) -> Techniques:
        """`plain`, or switches joined by `+` or `,`: `reasoning+similar+replan=2`.

        Switches start from `plain` (all off), so a spec names exactly what is on. Changes
        relative to a planner's default (`+name`, `-name`) are `TechniqueChanges.parse`'s.
        """
        spec = text.strip()
        if spec in ("", "default"):
            raise UsageError("'default' depends on the planner: use parse_spec")
        if spec == "plain":
            return Techniques.plain()
        if spec[0] == "+" or any(p.strip().startswith("-")
                                 for p in spec.replace(",", "+").split("+")):
            raise UsageError(f"bad techniques {spec!r}: write either switches (grounded+decline)"
                             " or only changes to the default (+grounded,-decline), not both")
        values: dict[str, bool | int] = {}
        names = {f.name: f for f in fields(Techniques)}
        for part in spec.replace(",", "+").split("+"):
            name, _, raw = part.strip().partition("=")
            if name not in names:
                raise UsageError(f"unknown technique {name!r}; choose from "
                                 f"{', '.join(names)} (or plain, default)")
            values[name] = _switch_value(names[name], raw, bool(raw), "")
        plain = Techniques.plain()
        return Techniques(**{**{f.name: getattr(plain, f.name) for f in fields(plain)},
                             **values})


# The defaults use only what holds for any phrasing, language and tool set: the
# tool schemas, values the goal states verbatim (`mentions`), execution results
# (`grounded`) and the grammar's structure (`backrefs`, `typed`, `distinct`).
# Tool calling and ReAct leave `mentions` out: on BFCL it rejected correct calls whose
# values the goal does not write as the tool takes them ("3%" for 0.03, the speed of
# light for 299792458) (docs/BENCHMARKS.md, "External yardsticks"). Tool calling takes
# the model's own values (`native`): BFCL development 29/40 against 27/40, held-out 12/24
# against 10/24, the multilingual subset unchanged, at 1.19-1.26x the tokens. The tree
# planner passes every enum value the goal writes (`values`): generalisation 22/47 against
# 20/47, the multilingual subset 16/56 against 13/56 (no task lost), the invoice scenario
# 5/5 seeds against 0/5 and in four languages, at 1.04x the tokens. In tool calling
# `values` holds the loop until each of those values reached a call: multilingual subset
# 8/56 against 6/56, BFCL development and held-out unchanged (29/40, 12/24). Leaving out
# optional arguments whose values nobody stated (`defaults`) stays opt-in: BFCL development
# +3 of 80, none lost, but on the held-out check it dropped values the goal gives in another
# form (a date whose month is a word, a URL built from the goal's parts): live_simple 5/8
# with it against 7/8 before. `fresh` (a later turn's calls must pass something new) stays
# opt-in: on the 1.5B, BFCL development 132/176 against 106/176 (multiple 36/48 against
# 11/48), but it refuses correct chains that look the same entity up twice with another
# function (`GetPoints(team=Lynx)`, then `GetGoals(team=Lynx)`: 7 of 47 multilingual
# reference plans).
#
# Tool calling, chosen again on the 1.5B from `plain` (stop 52, BFCL development 8 a
# category, docs/BENCHMARKS.md): once the turn grammar admits the model's own call openers
# (a ```json fence, a bare object), `plain` matches the bare model (18/40 against 19/40;
# simple and multiple 16/16 each) and every former switch costs there: the planner's
# system text (`instruct`) makes the model explain instead of call (simple 4/8, multiple
# 4/8). `decline` with the 1.5B's calibrated thresholds declines 5/8 irrelevant questions
# where plain declines 1, losing no answerable one (22/40); `grounded` adds nothing on
# BFCL (22/40) but answers with the value a tool returned, in a short constrained turn
# (12.8 s a case against plain's 27 s of prose). `native`, `values` and `instruct` are
# opt-in until measured again on the 1.5B.
#
# Stop 56 (BFCL development, 16 a category, the 1.5B): calls in the chat template's tags
# (`tags`) make the model write one call per part of a goal in several parts, and `fresh`,
# now also from the first turn's second call on, drops the extra calls it adds on reused
# or unstated values: `grounded+decline+fresh+tags` 61/80 against `grounded+decline` 44/80
# and raw 34/80 (parallel 10 against 1, parallel_multiple 9 against 1, multiple 16 both).
# Stop 57: `observe` (a record's field picked seeing the goal and the results alone): BFCL
# judges calls, so unchanged there; on goals asking one field of a `-> dict` record the
# 1.5B's tools answers went from 1/3 to 3/3.
PLANNER_DEFAULTS: dict[str, Techniques] = {
    "tools": Techniques(mentions=False, backrefs=False, grounded=True, decline=True,
                        fresh=True, tags=True, observe=True),
    "react": Techniques(mentions=False, backrefs=False, grounded=True),
    "tree": Techniques(mentions=True, backrefs=False, values=True),
    "sequential": Techniques(mentions=True, backrefs=True, typed=True, distinct=True),
}

def default_techniques(planner: str, model: str | None = None) -> Techniques:
    """The measured default configuration of `planner` (tree, sequential, react, tools):
    `model`'s own where its catalog entry names one (`techniques = {tools = "..."}`: a
    default measured on that model), else `PLANNER_DEFAULTS`."""
    from localagent.llm.catalog import catalog_entry

    entry = catalog_entry(model) if model else None
    own = entry.techniques.get(planner) if entry else None
    return Techniques.parse(own) if own else PLANNER_DEFAULTS.get(planner, Techniques())


@dataclass(frozen=True)
class TechniqueChanges:
    """Changes to each planner's own default (`PLANNER_DEFAULTS`): `+replan=2,-mentions`.

    `on` holds the switches turned on (True) or set (a number), `off` those turned back to
    their `plain` value, each named once. `apply` gives the techniques for one planner: its
    default with the changes; turning off a switch that default does not have on is a
    `UsageError` (the change would do nothing, so the spec is likely a mistake).
    """

    on: tuple[tuple[str, bool | int], ...] = ()
    off: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The changes in canonical form, ons then offs: `+similar,+replan=2,-mentions`."""
        ons = [f"+{n}" if v is True else f"+{n}={v}" for n, v in self.on]
        return ",".join([*ons, *(f"-{n}" for n in self.off)])

    def apply(self, planner: str, model: str | None = None) -> Techniques:
        """`planner`'s default techniques (for `model`) with these changes."""
        base, plain = default_techniques(planner, model), Techniques.plain()
        for name in self.off:
            if getattr(base, name) == getattr(plain, name):
                raise UsageError(f"cannot remove technique {name}: it is not on in the "
                                 f"{planner} planner's default ({base.label})")
        return replace(base, **{n: getattr(plain, n) for n in self.off}, **dict(self.on))

    @staticmethod
    def parse(text: str) -> TechniqueChanges:
        """`+name`, `+name=N` or `-name` items, separated by commas or spaces or written
        one after another (`+similar-mentions`); see `parse_spec`."""
        items = [m.group(0) for m in re.finditer(r"[+-][^+\-,\s]*", text)]
        if "".join(items) != re.sub(r"[,\s]", "", text):
            raise UsageError(f"bad technique changes {text.strip()!r}: every item is +name, "
                             "+name=N or -name (e.g. '+replan=2,-mentions'); an absolute "
                             "spec (grounded+decline) has no leading + or -")
        names = {f.name: f for f in fields(Techniques)}
        on: dict[str, bool | int] = {}
        off: list[str] = []
        for item in items:
            sign, (name, eq, raw) = item[0], item[1:].partition("=")
            if name not in names:
                raise UsageError(f"unknown technique {name!r} in {item!r}; choose from "
                                 f"{', '.join(names)}")
            if name in on or name in off:
                raise UsageError(f"technique {name} is changed twice in {text.strip()!r}")
            if sign == "-":
                if eq:
                    raise UsageError(f"{item!r}: removing a technique takes no value "
                                     f"(write -{name})")
                off.append(name)
            else:
                on[name] = _switch_value(names[name], raw, bool(eq), "+")
        replace(Techniques.plain(), **on)  # the ranges (replan, vote) checked now
        return TechniqueChanges(tuple(on.items()), tuple(off))


TechniqueSpec = Techniques | TechniqueChanges | None
"""A parsed `--techniques`: absolute, changes to each planner's default, or None (default)."""


def resolve(spec: TechniqueSpec, planner: str, model: str | None = None) -> Techniques:
    """The techniques `planner` uses under `spec` (None: its default, for `model` where its
    catalog entry names one; changes: applied to that default)."""
    if spec is None:
        return default_techniques(planner, model)
    if isinstance(spec, TechniqueChanges):
        return spec.apply(planner, model)
    return spec


def parse_spec(text: str) -> TechniqueSpec:
    """A technique spec (`--techniques`, the config's `techniques`), one of:

    - `default` (or empty): None, each planner's own default (`PLANNER_DEFAULTS`);
    - absolute: `plain`, or switches joined by `+` or `,` (`grounded+decline`,
      `reasoning+replan=2`): exactly those on, every other off, for every planner;
    - relative (the first character is `+` or `-`): changes to each planner's own default,
      `+name` turns a switch on, `+name=N` sets replan or vote, `-name` turns one off;
      items separated by commas or spaces (`+replan=2,-mentions`, `"+similar -mentions"`).
      A `TechniqueChanges`, resolved per planner by `resolve`.

    Bad input (an unknown name, a value on a switch, a missing or out-of-range number, a
    relative item mixed with absolute ones) raises a one-line `UsageError`.
    """
    spec = text.strip()
    if spec in ("", "default"):
        return None
    if spec[0] in "+-":
        return TechniqueChanges.parse(spec)
    return Techniques.parse(spec)


def parse_variants(text: str) -> list[TechniqueSpec]:
    """A `;`-separated list of technique specs (the benchmark's `--techniques`)."""
    if not text.strip(";").strip():
        raise UsageError("--techniques is empty")
    variants = [parse_spec(v) for v in text.split(";") if v.strip()] or [None]
    return list({v.label if v else "default": v for v in variants}.values())


def _switch_value(field: Any, raw: str, given: bool, prefix: str) -> bool | int:
    """The value a spec item sets: True for an on/off switch (which takes no `=value`),
    the whole number after `=` for a counted one (replan, vote)."""
    if field.type in ("bool", bool):
        if given:
            hint = f" (write {prefix}{field.name})" if prefix else ""
            raise UsageError(f"technique {field.name} takes no value{hint}")
        return True
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"technique {field.name} needs a whole number, e.g. "
                         f"{prefix}{field.name}=2") from None
