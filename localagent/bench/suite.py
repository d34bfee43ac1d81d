"""Task suites for the planner benchmark: goals, the plugins they need, expected answers.

A suite is a YAML (or JSON) file so users can measure planners on their own tasks without
writing Python. Format (every key but `id`, `goal`, `plugins` and `expect` is optional):

    name: my-suite
    tasks:
      - id: invoice-d                 # unique; part of the resume key
        category: single              # free text, for grouping in reports
        language: en                  # the goal's language (default en)
        goal: What is the invoice amount of company D?
        plugins: [DemoPlugin]         # known names, WeatherPlugin:dry, a path or a module
        exclude: [MathPlugin.Calculator]   # functions not offered
        distractors: 40               # unrelated tools from the retrieval dataset
        filter: {max_tools: 8}        # how to filter when the benchmark filters this task
                                      # (+ include: [P.F, ...], always offered)
        max_iterations: 5             # react / tools steps
        expect: {number: 6700, tolerance: 0.5}
        solution: {function: DemoPlugin.GetInvoice, args: {company: D}}  # reference plan

`expect` is one mapping or a list of them (all must hold); each names one comparator:
`exact`, `number` (+ `tolerance`, `rel_tolerance`), `contains` (a string or a list, all
must appear; `case_sensitive`), `regex` (`flags: i`), `check` ("module:function"),
`declined: true` (no offered tool can answer the goal: the run is right when it ends
without an answer, and any answer is wrong; it stands alone in `expect`).
Plugin paths are relative to the suite file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from localagent.errors import UsageError

Comparator = Literal["exact", "number", "contains", "regex", "check", "declined"]
COMPARATORS: tuple[str, ...] = get_args(Comparator)
_OPTIONS = {"tolerance", "rel_tolerance", "case_sensitive", "flags"}
_TASK_KEYS = {
    "id",
    "category",
    "language",
    "goal",
    "plugins",
    "exclude",
    "distractors",
    "filter",
    "max_iterations",
    "expect",
    "notes",
    "solution",
}


@dataclass(frozen=True)
class Expectation:
    """One comparator and its expected value (`options`: tolerance, flags...)."""

    kind: Comparator
    value: Any
    options: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class TaskFilter:
    """The filter options used when the benchmark filters this task."""

    max_tools: int | None = 8
    threshold: float | None = None
    include: tuple[str, ...] = ()  # functions always offered (SK's included_functions)


@dataclass(frozen=True)
class Task:
    id: str
    goal: str
    plugins: tuple[str, ...]
    expect: tuple[Expectation, ...]
    category: str = ""
    language: str = "en"
    exclude: tuple[str, ...] = ()
    distractors: int = 0
    filter: TaskFilter | None = None
    max_iterations: int = 5
    base_dir: Path = field(default=Path("."), compare=False)
    solution: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    """A reference plan (the raw tree form `plan_from_dict` reads); tests execute it to
    check the expected answer. Never shown to a planner."""

    @property
    def declines(self) -> bool:
        """Whether the task expects no answer (`declined: true`): no offered tool fits."""
        return any(e.kind == "declined" for e in self.expect)

    @property
    def wants_filter(self) -> bool:
        """Tasks with many tools (distractors or an explicit filter) are filtered in `auto`."""
        return self.filter is not None or self.distractors > 0


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    tasks: tuple[Task, ...]

    def select(self, ids: list[str] | None = None, limit: int | None = None) -> Suite:
        """A suite with only the named tasks (in file order), then the first `limit`."""
        tasks = list(self.tasks)
        if ids:
            known = {t.id for t in tasks}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise UsageError(f"unknown task id(s) in {self.path.name}: {', '.join(unknown)}")
            tasks = [t for t in tasks if t.id in ids]
        if limit is not None:
            if limit < 1:
                raise UsageError(f"--limit must be at least 1, got {limit}")
            tasks = tasks[:limit]
        return Suite(self.name, self.path, tuple(tasks))


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite; every problem is a UsageError naming the task."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"suite file {path} does not exist")
    data = _read(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), list):
        raise UsageError(f"{path}: expected a mapping with a 'tasks' list")
    if not data["tasks"]:
        raise UsageError(f"{path}: the suite has no tasks")
    tasks = [_task(raw, n, path) for n, raw in enumerate(data["tasks"], 1)]
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise UsageError(f"{path}: duplicate task id {task.id!r}")
        seen.add(task.id)
    return Suite(str(data.get("name") or path.stem), path, tuple(tasks))


def _read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: invalid JSON: {exc}") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None


def _task(raw: Any, n: int, path: Path) -> Task:
    where = f"{path.name} task {n}"
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where}: expected a mapping")
    if isinstance(raw.get("id"), str):
        where = f"{path.name} task {raw['id']!r}"
    unknown = sorted(set(raw) - _TASK_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}")
    task_id, goal = raw.get("id"), raw.get("goal")
    if not isinstance(task_id, str) or not task_id.strip():
        raise UsageError(f"{where}: 'id' must be a non-empty string")
    if not isinstance(goal, str) or not goal.strip():
        raise UsageError(f"{where}: 'goal' must be a non-empty string")
    distractors = raw.get("distractors", 0)
    iterations = raw.get("max_iterations", 5)
    for name, value in (("distractors", distractors), ("max_iterations", iterations)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"{where}: '{name}' must be a whole number >= 0")
    if iterations < 1:
        raise UsageError(f"{where}: 'max_iterations' must be at least 1")
    return Task(
        id=task_id.strip(),
        goal=goal.strip(),
        plugins=_names(raw.get("plugins"), "plugins", where),
        expect=_expectations(raw.get("expect"), where),
        category=str(raw.get("category") or ""),
        language=_language(raw.get("language", "en"), where),
        exclude=_names(raw.get("exclude") or [], "exclude", where, empty_ok=True),
        distractors=distractors,
        filter=_filter(raw.get("filter"), where),
        max_iterations=iterations,
        base_dir=path.resolve().parent,
        solution=_solution(raw.get("solution"), where),
    )


def _language(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where}: 'language' must be a language code such as en or de")
    return value.strip()


def _solution(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise UsageError(f"{where}: 'solution' must be a plan mapping such as {{function: P.F}}")
    return dict(value)


def _names(value: Any, key: str, where: str, *, empty_ok: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{where}: '{key}' must be a list of names")
    if not value and not empty_ok:
        raise UsageError(f"{where}: '{key}' must name at least one plugin")
    return tuple(value)


def _filter(value: Any, where: str) -> TaskFilter | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - {"max_tools", "threshold", "include"}:
        raise UsageError(f"{where}: 'filter' takes max_tools, threshold and include")
    include = _names(value.get("include") or [], "filter.include", where, empty_ok=True)
    return TaskFilter(max_tools=value.get("max_tools"), threshold=value.get("threshold"),
                      include=include)


def _expectations(value: Any, where: str) -> tuple[Expectation, ...]:
    items = value if isinstance(value, list) else [value]
    if value is None or not items:
        raise UsageError(f"{where}: 'expect' is required")
    expectations = tuple(_expectation(item, where) for item in items)
    if len(expectations) > 1 and any(e.kind == "declined" for e in expectations):
        raise UsageError(f"{where}: 'declined' cannot be combined with other expectations")
    return expectations


def _expectation(item: Any, where: str) -> Expectation:
    if not isinstance(item, Mapping):
        raise UsageError(f"{where}: each 'expect' must be a mapping such as {{number: 42}}")
    kinds = [k for k in item if k in COMPARATORS]
    extra = sorted(set(item) - set(COMPARATORS) - _OPTIONS)
    if len(kinds) != 1 or extra:
        raise UsageError(
            f"{where}: 'expect' needs exactly one of {', '.join(COMPARATORS)}"
            + (f" (unknown: {', '.join(extra)})" if extra else "")
        )
    kind = kinds[0]
    value = item[kind]
    options = {k: item[k] for k in item if k in _OPTIONS}
    _check_expectation(kind, value, options, where)
    return Expectation(kind, value, options)  # type: ignore[arg-type]


def _check_expectation(kind: str, value: Any, options: dict[str, Any], where: str) -> None:
    if kind == "number":
        numbers = [value, options.get("tolerance", 0), options.get("rel_tolerance", 0)]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in numbers):
            raise UsageError(f"{where}: 'number' and its tolerances must be numbers")
        if min(numbers[1:]) < 0:
            raise UsageError(f"{where}: tolerances must not be negative")
    elif kind == "contains":
        parts = value if isinstance(value, list) else [value]
        if not parts or not all(isinstance(p, str) and p for p in parts):
            raise UsageError(f"{where}: 'contains' takes a string or a list of strings")
    elif kind == "declined" and value is not True:
        raise UsageError(f"{where}: 'declined' takes only true")
    elif kind in ("regex", "check") and not isinstance(value, str):
        raise UsageError(f"{where}: '{kind}' takes a string")
    if kind == "regex":
        import re

        try:
            re.compile(value)
        except re.error as exc:
            raise UsageError(f"{where}: invalid regex {value!r}: {exc}") from None
    if kind == "check" and ":" not in value:
        raise UsageError(f"{where}: 'check' must be 'module:function', got {value!r}")
