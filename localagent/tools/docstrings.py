"""Read a function's summary and argument descriptions from its docstring.

Why a small parser of our own: neither griffe nor docstring_parser is a dependency, and
we need only two things from a docstring, the summary (the tool's description) and one
line of text per argument (Google `Args:` sections and Sphinx `:param x:` fields; NumPy
`Parameters` sections too, since they are cheap to recognise).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_GOOGLE_ARGS = {"args", "arguments", "parameters", "params", "keyword args", "kwargs"}
_GOOGLE_SECTIONS = _GOOGLE_ARGS | {
    "returns",
    "return",
    "yields",
    "raises",
    "examples",
    "example",
    "note",
    "notes",
    "attributes",
    "see also",
    "warning",
    "warnings",
    "todo",
}
_SECTION_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\*{0,2}\w+)\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^\s*:\w+")
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class Docstring:
    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Summary = the first paragraph; params = argument name -> one-line description."""
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    params.update(_google_params(lines))
    params.update(_numpy_params(lines))
    params.update(_sphinx_params(lines))
    return Docstring(summary=_summary(lines), params=params)


def _summary(lines: list[str]) -> str:
    out: list[str] = []
    for i, line in enumerate(lines):
        next_is_rule = i + 1 < len(lines) and bool(_NUMPY_RULE.match(lines[i + 1]))
        if _SPHINX_FIELD.match(line) or _is_google_section(line) or next_is_rule:
            break  # a section starts: the summary is over
        if not line.strip():
            if out:
                break  # the end of the first paragraph
            continue
        out.append(line.strip())
    return " ".join(out)


def _is_google_section(line: str) -> bool:
    m = _SECTION_RE.match(line)
    return bool(m and m.group(1).lower() in _GOOGLE_SECTIONS)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = _SECTION_RE.match(lines[i])
        if not (m and m.group(1).lower() in _GOOGLE_ARGS):
            i += 1
            continue
        base = _indent(lines[i])
        i += 1
        arg_indent: int | None = None
        current: str | None = None
        while i < len(lines):
            line = lines[i]
            if line.strip() and _indent(line) <= base:
                break  # the section ended
            if line.strip():
                ind = _indent(line)
                if arg_indent is None:
                    arg_indent = ind
                am = _GOOGLE_ARG.match(line.strip())
                if ind == arg_indent and am:
                    current = am.group(1).lstrip("*")
                    params[current] = am.group(3).strip()
                elif current is not None:  # a continuation line
                    params[current] = f"{params[current]} {line.strip()}".strip()
            i += 1
    return params


def _numpy_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for i in range(len(lines) - 1):
        if lines[i].strip().lower() not in {"parameters", "params", "arguments"}:
            continue
        if not _NUMPY_RULE.match(lines[i + 1]):
            continue
        j, current, base = i + 2, None, _indent(lines[i])
        while j < len(lines):
            line = lines[j]
            if j + 1 < len(lines) and _NUMPY_RULE.match(lines[j + 1]):
                break  # the next section's heading
            if line.strip() and _indent(line) == base:
                current = line.split(":")[0].strip().lstrip("*")
                params[current] = ""
            elif line.strip() and current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
            j += 1
    return params


def _sphinx_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        m = _SPHINX_PARAM.match(line)
        if m:
            current = m.group(1).lstrip("*")
            params[current] = m.group(2).strip()
        elif _SPHINX_FIELD.match(line) or not line.strip():
            current = None
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return params
