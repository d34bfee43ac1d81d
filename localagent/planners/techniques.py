"""Planning techniques that make small models plan better, each behind its own switch.

Why switches rather than always-on: issue 8 asks that every technique be measured alone
and combined on the generalisation suite (`scripts/bench_planners.py --techniques`), and
that the defaults be chosen from those measurements. A `Techniques` value is the whole
configuration; its `label` names it in benchmark keys and reports. "default" is per
planner (`default_techniques`): what measured best for that planner within 2x the tokens.

| switch        | planners           | what it does                                              |
|---------------|--------------------|-----------------------------------------------------------|
| reasoning     | tree, sequential   | a short free-text "reasoning" field before the plan       |
| steps         | tree, sequential   | the reasoning is a numbered list of calls of real         |
|               |                    | functions (the grammar admits only their names)           |
| similar       | tree, sequential   | few-shot examples picked by embedding similarity (Chroma) |
|               |                    | from a library of solved plans, instead of fixed ones     |
| mentions      | tree, sequential,  | enum and number arguments may only take values the goal   |
|               | react              | states (react: or an observation shows); otherwise they   |
|               |                    | must be looked up (a nested call, a $k, an earlier action)|
| grounded      | react, tools       | the final answer may only restate an observed value       |
| cover         | react, tools       | no answer until every enum value the goal names (a city,  |
|               |                    | a company) was passed to some call (see coverage.py)      |
|               | tree               | the grammar admits only plans passing each of them to a   |
|               |                    | call (grammar/covering.py)                                |
| calls         | react, tools       | no answer until every function the goal names by its      |
|               |                    | name's words ("department", "manager") was called         |
|               |                    | (a self-map named twice, "X's manager's manager": twice)  |
| together      | tree               | as cover, and values the goal lists together ("C, F") are |
|               |                    | combined in one call first (grammar/covering.py)          |
| check         | tools              | a goal stating a condition ("if") calls a yes/no function |
|               |                    | first; a "no" without an alternative in the goal forces   |
|               |                    | the answer, else one action and the answer (condition.py) |
| answer        | tree, sequential   | the outermost call (the last step) must return the kind   |
|               |                    | of value the question asks for: "how many" a number,      |
|               |                    | "which" a name (answer_kind.py)                           |
| head          | tree, sequential   | the outermost call (the last step) is what the question's |
|               |                    | head names: the operation of its cue ("more ... than":    |
|               |                    | subtract, "per": divide) or its head noun ("What is the   |
|               |                    | yearly salary of ...": GetSalary) (head.py)               |
|               | react, tools       | no answer before one of those functions was called        |
| numbers       | tree               | with mentions: every number the goal states ("12 equal    |
|               |                    | parts", "a 250 km trip") is passed to some call           |
| shallow       | tree               | arithmetic only in a plan's outer two levels, the second  |
|               |                    | with a call among its arguments (nesting.py)              |
| nouns         | tree, sequential,  | a function the goal names as "X's N", "the N of X" or     |
|               | react, tools       | "per N" must be called (nouns.py)                         |
| result        | react, tools       | once the head's function (`head`) was the latest call and |
|               |                    | nothing is pending, answer; a grounded answer restates a  |
|               |                    | result no later call took as an argument (grounding.py)   |
| compact       | tree, sequential   | the real task's functions written as one signature line,  |
|               |                    | exactly as in the examples, not as the full manual        |
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
| named         | sequential         | a goal asking for prose that names two or more functions  |
|               |                    | ("short poems ... in uppercase") is offered only the      |
|               |                    | functions it names, in its order (named.py)               |
| replan=N      | tree, sequential   | after a failed execution, plan again with the error, N x  |
| vote=K        | tree, sequential   | sample K plans, execute them, answer by majority          |
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from localagent.errors import UsageError


@dataclass(frozen=True)
class Techniques:
    """Which techniques a planner uses; `Techniques.plain()` turns all off.

    `Techniques()` (`mentions+backrefs`) is the base every planner's default adds to
    (`PLANNER_DEFAULTS`: tree and sequential `answer`, tool calling `grounded`, ...),
    chosen from the generalisation-suite measurements
    (docs/BENCHMARKS.md, "Planning techniques"): mentions gained the most (+8 points for
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
    cover: bool = False
    calls: bool = False
    together: bool = False
    check: bool = False
    answer: bool = False
    head: bool = False
    nouns: bool = False
    shallow: bool = False
    numbers: bool = False
    result: bool = False
    ordered: bool = False
    distinct: bool = False
    typed: bool = False
    compact: bool = False
    backrefs: bool = True
    pipe: bool = False
    named: bool = False
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
                          grounded=False, cover=False, calls=False, together=False, check=False,
                          answer=False, head=False, nouns=False, shallow=False,
                          numbers=False, result=False, ordered=False, distinct=False,
                          typed=False,
                          compact=False, backrefs=False, pipe=False,
                          named=False, replan=0, vote=1)

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

        Switches start from `plain` (all off), so a spec names exactly what is on.
        """
        spec = text.strip()
        if spec in ("", "default"):
            raise UsageError("'default' depends on the planner: use parse_spec")
        if spec == "plain":
            return Techniques.plain()
        values: dict[str, bool | int] = {}
        names = {f.name: f for f in fields(Techniques)}
        for part in spec.replace(",", "+").split("+"):
            name, _, raw = part.strip().partition("=")
            if name not in names:
                raise UsageError(f"unknown technique {name!r}; choose from "
                                 f"{', '.join(names)} (or plain, default)")
            if names[name].type in ("bool", bool):
                if raw:
                    raise UsageError(f"technique {name} takes no value")
                values[name] = True
            else:
                try:
                    values[name] = int(raw)
                except ValueError:
                    raise UsageError(f"technique {name} needs a whole number, e.g. "
                                     f"{name}=2") from None
        plain = Techniques.plain()
        return Techniques(**{**{f.name: getattr(plain, f.name) for f in fields(plain)},
                             **values})


# Where a planner's measured best differs from `Techniques()` (docs/BENCHMARKS.md): tool
# calling with `grounded` went from 0% to 41% on the core suite at 1.26x the tokens (the
# default model describes a call in prose unless a call must come first), while grounded
# ReAct lost 4 points on the generalisation suite (stop 12; it takes it since stop 17, with `result`).
# The tree and sequential planners take `answer` (+1 goal of 24 each on the generalisation
# suite at 1.0x the tokens; its grammars admit every reference plan of the suite: a test
# checks it). The tree planner also takes `together` (the invoice goal 0/5 -> 4/5, +2 of
# the 23 held-out suite goals, +0 on the other half, 1.0x tokens), tool calling `check`
# (the bet scenario 1/5 -> 5/5 with rain and 0/5 -> 5/5 without, the core suite's
# conditional goals 4/6 -> 6/6 at 1.12x tokens; it acts only on a goal that states a
# condition that an offered yes/no function decides).
# Stop 15: the sequential planner takes `named` (the poems 0/1 -> 5/5 seeds; no suite goal
# asks for prose, so the suite is unchanged; the core suite's text goals 2/6 -> 3/6), ReAct
# `cover` and `calls` (18/47 -> 25/47 over both halves of the generalisation suite at
# 1.02x the tokens; `calls` alone 22/47); tool calling not `calls` (8/24 -> 6/24).
# Stop 16: the tree planner takes `head`, `nouns`, `shallow` and `numbers` (and `once`,
# since deleted: issue 20)
# (28/47 -> 43/47 on the generalisation suite; docs/BENCHMARKS.md, "Stop 16"), ReAct
# `head` and `nouns` (25/47 -> 31/47 at 1.01x the tokens), the sequential planner `head`
# (20/47 -> 30/47 at 0.97x the tokens).
# Stop 17: tool calling takes `cover`, `calls`, `head`, `nouns` and the new `result`
# (8/24 -> 20/24 on the even half of the generalisation suite at 0.98x the tokens; 36/47
# on both halves), ReAct `grounded` and `result` (31/47 -> 33/47 at 0.98x the tokens).
# Stop 18: the sequential planner takes `typed` and `distinct` (30/47 -> 34/47 with the
# verb head of `head`; docs/BENCHMARKS.md, "Stop 18").
PLANNER_DEFAULTS: dict[str, Techniques] = {"tools": Techniques(grounded=True, check=True,
                                                               cover=True, calls=True,
                                                               head=True, nouns=True,
                                                               result=True),
                                           "react": Techniques(grounded=True, cover=True,
                                                               calls=True, head=True,
                                                               nouns=True, result=True),
                                           "tree": Techniques(answer=True, together=True,
                                                              head=True, nouns=True,
                                                              shallow=True, numbers=True),
                                           "sequential": Techniques(answer=True, named=True,
                                                                    head=True, typed=True,
                                                                    distinct=True)}


def default_techniques(planner: str) -> Techniques:
    """The measured default configuration of `planner` (tree, sequential, react, tools)."""
    return PLANNER_DEFAULTS.get(planner, Techniques())


def parse_spec(text: str) -> Techniques | None:
    """A technique spec; `default` (or empty) gives None: each planner's own default."""
    spec = text.strip()
    return None if spec in ("", "default") else Techniques.parse(spec)


def parse_variants(text: str) -> list[Techniques | None]:
    """A `;`-separated list of technique specs (the benchmark's `--techniques`)."""
    if not text.strip(";").strip():
        raise UsageError("--techniques is empty")
    variants = [parse_spec(v) for v in text.split(";") if v.strip()] or [None]
    return list({v.label if v else "default": v for v in variants}.values())
