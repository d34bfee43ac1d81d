"""The tool-call turn constraint: one or more calls in a chat model's call format, or a
plain-text answer; and the answer-only constraint of a loop's last turn."""

from __future__ import annotations

from collections.abc import Sequence

from localagent.constraint import Constraint
from localagent.grammar.common import (
    DEFAULT_BOUNDS,
    HERMES,
    CallFormat,
    args_rules,
    cached,
    call_object,
    render,
)
from localagent.grammar.jsonlark import FIRST_CHAR, TEXT_CHAR, Bounds, LarkRules, lit
from localagent.tools.spec import ToolSpec


def tool_call_turn(tools: Sequence[ToolSpec], *, call_format: CallFormat = HERMES,
                   max_calls: int = 4, allow_answer: bool = True,
                   allowed_answers: Sequence[str] | None = None,
                   bounds: Bounds = DEFAULT_BOUNDS) -> Constraint:
    """One or more calls in `call_format` (parallel calls), each in the template's tags
    or all in one of the format's `blocks` (a ```json fence, bare objects one a line), or a
    plain-text answer (`allowed_answers`: only one of these texts, for grounded answers;
    `allow_answer=False`: calls only).

    The free answer holds no character a call is written with (the wrapper's first
    character, braces, angle brackets, backticks), so the two alternatives never overlap:
    a call, even a malformed one, can only be written as a call, never end the turn as
    answer text."""
    options = {"format": vars(call_format), "max_calls": max_calls, "answer": allow_answer,
               "answers": list(allowed_answers or []), "bounds": bounds}

    def build() -> str:
        # as the model writes JSON in a fence; the tags alone keep the compact form
        rules = LarkRules(bounds, pretty=bool(call_format.blocks))
        heads = args_rules(rules, tools, "body", lambda t, a: call_object(
            call_format.name_key, t.qualified_name, call_format.args_key, a, rules))
        calls = " | ".join([_repeated("call", lit(call_format.separator), max_calls)] + [
            f"{lit(o) if o else ''} {_repeated('body', lit(s), max_calls)} "
            f"{lit(c) if c else ''}".strip() for o, s, c in call_format.blocks])
        answer = _answer_regex(bounds.max_text, call_format.open[:1])
        if allowed_answers:
            answer = " | ".join(lit(a) for a in allowed_answers)
        return render("tool_call", start="calls | answer" if allow_answer else "calls",
                      calls=calls, open=lit(call_format.open), close=lit(call_format.close),
                      bodies=" | ".join(heads), answer=answer, rules=rules.render())

    return cached("tool_call", tools, options, build)


def text_answer(max_text: int = 400) -> Constraint:
    """Only a text answer, written as `tool_call_turn` admits it (the last turn)."""
    return Constraint(kind="lark", source="start: " + _answer_regex(max_text),
                      name="text-answer")


def _repeated(item: str, separator: str, n: int) -> str:
    """`item`, then up to n - 1 more, each after `separator`."""
    return f"{item} ({separator} {item}){{0,{n - 1}}}" if n > 1 else item


def _answer_regex(max_text: int, call_open: str = "<") -> str:
    """A text answer of at most `max_text` characters with no call character in it."""
    banned = "&&[^" + _rx_escape(call_open or "<") + "<>{}`]]"
    first, rest = FIRST_CHAR[:-1] + banned, TEXT_CHAR[:-1] + banned
    return f"/{first}(?:{rest}|\\n){{0,{max_text - 1}}}/"


def _rx_escape(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[/" else ch
