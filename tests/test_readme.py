"""Every console example in the README that prints an answer, run as a user runs it on the
default model, must print that answer: the front page never shows what the default model
does not do.

The examples are read from README.md itself (a `$ localagent run ...` line, its output, the
`answer: ...` line), so an edited example is tested as written. A Python block that
defines a file an example uses (`# my_plugins.py` on its first line) is written to the
working folder first.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import DEFAULT_ENV, DEFAULT_MODEL, REPO, run_cli

README = REPO / "README.md"
_CONSOLE = re.compile(r"```console\n(.*?)```", re.DOTALL)
_PYTHON = re.compile(r"```python\n# (\S+\.py)\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Example:
    command: tuple[str, ...]  # the arguments after `localagent`
    answer: str


def examples(text: str) -> list[Example]:
    """Each `$ ` command of a console block whose output (up to the next command) has an
    `answer: ` line."""
    out = []
    for block in _CONSOLE.findall(text):
        for run in re.split(r"^(?=\$ )", block, flags=re.MULTILINE):
            lines = run.splitlines()
            if not lines or not lines[0].startswith("$ "):
                continue
            answers = [line.removeprefix("answer: ") for line in lines
                       if line.startswith("answer: ")]
            if not answers:
                continue
            args = shlex.split(lines[0].removeprefix("$ "))
            assert args[0].endswith("localagent"), lines[0]
            out.append(Example(tuple(args[1:]), answers[-1]))
    return out


def files(text: str) -> dict[str, str]:
    return {name: body for name, body in _PYTHON.findall(text)}


EXAMPLES = examples(README.read_text(encoding="utf-8"))


def test_the_readme_has_answer_examples() -> None:
    assert len(EXAMPLES) >= 4, EXAMPLES
    assert all(e.command[0] == "run" for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.command[1][:40] for e in EXAMPLES])
def test_real_model_readme_example(example: Example, default_model_path: Path,
                                   tmp_path: Path) -> None:
    for name, body in files(README.read_text(encoding="utf-8")).items():
        if name in example.command:
            (tmp_path / name).write_text(body, encoding="utf-8")
    args = [str(tmp_path / a) if (tmp_path / a).is_file() else a for a in example.command]
    # as a user with the virtual environment active (`python` in an --mcp command is its)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = run_cli(*args, "--json", env={**DEFAULT_ENV, "PATH": path}, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["model"] == DEFAULT_MODEL
    assert _same(data["answer"], example.answer), (data["answer"], example.answer,
                                                    data.get("error"))


def _same(answer: object, shown: str) -> bool:
    """The answer as the CLI prints it after `answer: ` (numbers compared as numbers)."""
    try:
        return float(answer) == float(shown)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(answer).strip() == shown.strip()
