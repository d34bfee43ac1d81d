"""A plain-text format for labelled tool catalogs and queries (the retrieval benchmark's).

Why text, not JSON: 500+ tool descriptions are easier to write, review and diff one a line.

Tools file: `[plugin]` starts a plugin; then `Name | description | arg: text; arg: text`.
Queries file: `query | plugin.Name, plugin.Name` (every function the goal needs).
Lines starting with `#` and blank lines are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localagent.errors import UsageError
from localagent.paths import REPO_DIR
from localagent.tools.spec import ToolSpec

BENCH_DIR = REPO_DIR / "benchmarks" / "retrieval"


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    expected: tuple[str, ...]  # qualified names


def _lines(path: Path) -> list[tuple[int, str]]:
    return [
        (n, line.strip())
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _parameters(text: str) -> dict[str, object]:
    props: dict[str, object] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, _, desc = part.partition(":")
        props[name.strip()] = {"type": "string", "description": desc.strip()}
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def load_tools(path: Path = BENCH_DIR / "tools.txt") -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    plugin = ""
    for n, line in _lines(path):
        if line.startswith("[") and line.endswith("]"):
            plugin = line[1:-1].strip()
            continue
        fields = [f.strip() for f in line.split("|")]
        if not plugin or len(fields) not in (2, 3) or not fields[0] or not fields[1]:
            raise UsageError(f"{path}:{n}: expected 'Name | description | args' under [plugin]")
        args = fields[2] if len(fields) == 3 else ""
        specs.append(ToolSpec(plugin, fields[0], fields[1], _parameters(args)))
    return specs


def load_queries(path: Path = BENCH_DIR / "queries.txt") -> list[LabelledQuery]:
    queries = []
    for n, line in _lines(path):
        query, sep, expected = line.rpartition("|")
        names = tuple(e.strip() for e in expected.split(",") if e.strip())
        if not sep or not query.strip() or not names:
            raise UsageError(f"{path}:{n}: expected 'query | plugin.Name, ...'")
        queries.append(LabelledQuery(query.strip(), names))
    return queries
