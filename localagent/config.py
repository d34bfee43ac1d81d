"""Settings from flags, environment variables, the config file and built-in defaults.

Order of precedence, highest first (simonw/llm's rule: an environment variable for every
default, a flag beats everything):

1. a command-line flag (`--model ...`),
2. an environment variable (`LOCALAGENT_MODEL`, `LOCALAGENT_PLANNER`, ...),
3. the config file `$LOCALAGENT_HOME/config.toml` (`LOCALAGENT_HOME` defaults to
   `~/.localagent`), flat `key = value` lines such as `model = "smollm2-135m-instruct"`,
4. the built-in default.

`home` itself comes only from the environment or the default (the config file lives in it).
A bad value anywhere is a UsageError naming where it came from (exit code 2).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.errors import UsageError
from localagent.paths import REPO_DIR

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_NAME = "config.toml"


@dataclass(frozen=True)
class SettingDef:
    """One setting: its environment variable, how to read a value, its default."""

    name: str
    env: str
    help: str
    parse: Callable[[Any], Any]
    default: Callable[[dict[str, Setting]], Any]  # given the settings resolved before it
    in_file: bool = True  # may the config file set it?


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: str  # "flag", "env LOCALAGENT_MODEL", "config /path/config.toml", "default"


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty text")
    return value.strip()


def _planner(value: Any) -> str:
    from localagent.planners.names import PLANNERS

    text = _text(value)
    if text not in PLANNERS:
        raise ValueError(f"expected one of {', '.join(PLANNERS)}")
    return text


DEFAULT_MAX_TOOLS = 6  # measured: docs/BENCHMARKS.md, "Planning techniques"


def _count(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("expected a whole number")
    number = int(value)
    if number < 0 or (isinstance(value, float) and value != number):
        raise ValueError("expected a whole number >= 0")
    return number


def _techniques(value: Any) -> str:
    from localagent.errors import UsageError
    from localagent.planners.techniques import parse_spec

    text = _text(value)
    try:
        parse_spec(text)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    return text


def _positive_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("expected a whole number")
    number = int(value)  # ValueError for "abc", "1.5"
    if number < 1 or (isinstance(value, float) and value != number):
        raise ValueError("expected a whole number >= 1")
    return number


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _auto_bool(value: Any) -> bool | None:
    """true, false, or None for "auto" (the code decides case by case)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        return _bool(value)
    except ValueError:
        raise ValueError("expected true, false or auto") from None


def _path(value: Any) -> Path:
    return Path(_text(value)).expanduser()


def _seconds(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError("expected a number of seconds")
    number = float(value)
    if not number > 0 or number == float("inf"):
        raise ValueError("expected a positive number of seconds")
    return number


def _commands(value: Any) -> list[str]:
    """MCP server commands: a list of strings (flags, the config file) or, from the
    environment, a JSON list of strings or one command."""
    import json
    import shlex

    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("[") else [text] if text else []
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise ValueError('expected a list of commands such as ["python server.py"]')
    for command in value:
        if not shlex.split(command):  # ValueError for an unbalanced quote
            raise ValueError("an MCP server command is empty")
    return [c.strip() for c in value]


def _chroma_url(value: Any) -> str:
    from localagent.retrieval.server import ChromaServer

    text = value.strip() if isinstance(value, str) else _text(value)
    if not text:
        return ""
    try:
        return ChromaServer.parse(text).url
    except UsageError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None


def _base_url(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else _text(value)
    if text and not text.lower().startswith(("http://", "https://")):
        raise ValueError("expected an http(s) URL such as http://127.0.0.1:8000/v1")
    return text


def _server_kind(value: Any) -> str:
    from localagent.llm.remote import SERVER_KINDS

    text = _text(value)
    if text not in SERVER_KINDS:
        raise ValueError(f"expected one of {', '.join(SERVER_KINDS)}")
    return text


def _default_model(_: dict[str, Setting]) -> str:
    from localagent.llm.catalog import load_catalog

    return load_catalog().default


def _default_models_dir(items: dict[str, Setting]) -> Path:
    """The repository's models/ in a writable checkout, else <home>/models (as paths.py)."""
    repo = REPO_DIR / "models"
    if (repo / "catalog.toml").is_file() and os.access(repo, os.W_OK):
        return repo
    return items["home"].value / "models"


SETTINGS: tuple[SettingDef, ...] = (
    SettingDef(
        "home",
        "LOCALAGENT_HOME",
        "user folder: config file, index, results",
        _path,
        lambda _: Path.home() / ".localagent",
        in_file=False,
    ),
    SettingDef("model", "LOCALAGENT_MODEL", "catalog name or .gguf path", _text, _default_model),
    # A model server instead of llama.cpp in this process (llm/remote.py, docs/deployment.md).
    SettingDef("base_url", "LOCALAGENT_BASE_URL", "OpenAI-compatible model server, such as "
               "http://127.0.0.1:8000/v1 (empty: local model)", _base_url, lambda _: ""),
    SettingDef("api_key", "LOCALAGENT_API_KEY", "Bearer token for base_url (or a URL --model)",
               _text, lambda _: ""),
    SettingDef("server_kind", "LOCALAGENT_SERVER_KIND", "where the grammar goes: localagent, "
               "vllm, sglang or llama-server", _server_kind, lambda _: "localagent"),
    SettingDef(
        "planner",
        "LOCALAGENT_PLANNER",
        "tree, sequential, react or tools",
        _planner,
        lambda _: "tree",
    ),
    SettingDef(
        "max_iterations",
        "LOCALAGENT_MAX_ITERATIONS",
        "most model steps (react, tools)",
        _positive_int,
        lambda _: 5,
    ),
    SettingDef(
        "constrain", "LOCALAGENT_CONSTRAIN", "generate under grammars", _bool, lambda _: True
    ),
    SettingDef(
        "max_tools",
        "LOCALAGENT_MAX_TOOLS",
        "offer the planner at most this many functions, the most similar to the goal "
        "(0: all)",
        _count,
        lambda _: DEFAULT_MAX_TOOLS,
    ),
    SettingDef(
        "whole_plugins",
        "LOCALAGENT_WHOLE_PLUGINS",
        "with max_tools, offer a plugin with a kept function whole when all of it fits in "
        "the count, so goals over the same tools share their prompt and the KV cache "
        "(off: count function by function, as Semantic Kernel does; the added functions "
        "cost the default model accuracy, docs/BENCHMARKS.md)",
        _bool,
        lambda _: False,
    ),
    SettingDef(
        "translate_goals",
        "LOCALAGENT_TRANSLATE_GOALS",
        "when the filter ranks functions, also search with the goal in English, written by "
        "the model: the bundled embedding model reads English only (one short generation "
        "per goal; localagent/retrieval/translation.py)",
        _bool,
        lambda _: True,
    ),
    SettingDef(
        "techniques",
        "LOCALAGENT_TECHNIQUES",
        "planning techniques: default, plain, switches such as reasoning+replan=2, or "
        "changes to each planner's default such as +replan=2,-mentions",
        _techniques,
        lambda _: "default",
    ),
    SettingDef(
        "examples",
        "LOCALAGENT_EXAMPLES",
        "also offer the example plugins (fixed demo data: invoices, people, weather, rates)",
        _bool,
        lambda _: False,
    ),
    SettingDef(
        "mcp",
        "LOCALAGENT_MCP",
        "MCP servers to start, their tools offered as plugins: a list of commands such as "
        '["python server.py"] (environment: a JSON list or one command)',
        _commands,
        lambda _: [],
    ),
    SettingDef(
        "mcp_timeout",
        "LOCALAGENT_MCP_TIMEOUT",
        "seconds an MCP server may take to start and list its tools (tools/mcp.py reads "
        "the environment variable, which the config file's value fills in)",
        _seconds,
        lambda _: 30.0,  # as tools/mcp.py DEFAULT_START_TIMEOUT
    ),
    SettingDef(
        "threads",
        "LOCALAGENT_THREADS",
        "llama.cpp threads (0: one per physical core; on a busy machine fewer can be faster)",
        _count,
        lambda _: 0,
    ),
    SettingDef(
        "prompt_cache",
        "LOCALAGENT_PROMPT_CACHE",
        "keep the model's state for shared prompt prefixes on disk (<home>/prompt_cache), "
        "so a new process need not evaluate them again",
        _bool,
        lambda _: True,
    ),
    SettingDef(
        "fast_forward",
        "LOCALAGENT_FAST_FORWARD",
        "under a grammar, evaluate the tokens it forces as one batch instead of sampling "
        "them one by one (localagent/llm/fast_forward.py): auto (the default) does so for "
        "greedy calls under the tree and sequential plan grammars, whose JSON forces long "
        "runs of tokens (the same text, about twice the tokens per second), and not for "
        "sampled calls (a seed would draw another sample) nor in the ReAct and "
        "tool-calling loops (batched evaluation changes logits slightly and flipped a "
        "near-tie greedy step of a ReAct seed scenario); true or false for every call",
        _auto_bool,
        lambda _: None,
    ),
    SettingDef(
        "drafts",
        "LOCALAGENT_DRAFTS",
        "in greedy calls under a grammar, draft tokens from the prompt (prompt-lookup "
        "decoding: what followed the last few tokens where they occurred before) and let "
        "the model check a whole draft in one batch (localagent/llm/speculative.py)",
        _bool,
        lambda _: True,
    ),
    SettingDef(
        "prompt_cache_bytes",
        "LOCALAGENT_PROMPT_CACHE_BYTES",
        "size cap of the prompt cache in bytes; the least recently used states go first",
        _positive_int,
        lambda _: 1 << 30,
    ),
    SettingDef(
        "models_dir",
        "LOCALAGENT_MODELS_DIR",
        "where assembled GGUF files live",
        _path,
        _default_models_dir,
    ),
    SettingDef(
        "index_dir",
        "LOCALAGENT_INDEX_DIR",
        "the tool index (Chroma)",
        _path,
        lambda items: items["home"].value / "index",
    ),
    SettingDef(
        "chroma_url",
        "LOCALAGENT_CHROMA_URL",
        "a Chroma server for the tool index instead of index_dir, such as "
        "http://127.0.0.1:8000 (empty: the local folder; docs/deployment.md)",
        _chroma_url,
        lambda _: "",
    ),
)
BY_NAME: dict[str, SettingDef] = {s.name: s for s in SETTINGS}


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$LOCALAGENT_HOME/config.toml`."""
    env = os.environ if env is None else env
    home = env.get("LOCALAGENT_HOME") or str(Path.home() / ".localagent")
    return Path(home).expanduser() / CONFIG_NAME


def read_config_file(path: Path) -> dict[str, Any]:
    """The file's settings ({} when there is no file); UsageError for bad TOML or keys."""
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    allowed = [s.name for s in SETTINGS if s.in_file]
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        raise UsageError(
            f"{path}: unknown setting(s) {', '.join(unknown)}", hint=f"known: {', '.join(allowed)}"
        )
    return data


class Settings:
    """Every setting with its value and where it came from."""

    def __init__(self, items: Mapping[str, Setting], path: Path) -> None:
        self.items = dict(items)
        self.path = path

    def value(self, name: str) -> Any:
        return self.items[name].value

    def source(self, name: str) -> str:
        return self.items[name].source

    def __iter__(self) -> Any:
        return iter(self.items.values())


def load_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Resolve every setting by precedence. `flags` maps setting names to flag values;
    None means "flag not given"."""
    env = os.environ if env is None else env
    flags = flags or {}
    unknown = sorted(set(flags) - set(BY_NAME))
    if unknown:
        raise UsageError(f"unknown setting(s) {', '.join(unknown)}")
    path = config_path(env)
    file_values = read_config_file(path)
    items: dict[str, Setting] = {}
    for spec in SETTINGS:
        candidates = [
            (flags.get(spec.name), "flag"),
            (env.get(spec.env) or None, f"env {spec.env}"),
            (file_values.get(spec.name), f"config {path}"),
        ]
        raw, source = next(((v, s) for v, s in candidates if v is not None), (None, "default"))
        items[spec.name] = Setting(spec.name, _parse(spec, raw, source, items), source)
    return Settings(items, path)


def _parse(spec: SettingDef, raw: Any, source: str, items: dict[str, Setting]) -> Any:
    if source == "default":
        return spec.default(items)
    try:
        return spec.parse(raw)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{spec.name} = {raw!r} from {source}: {exc}") from None


def apply_config_file(env: MutableMapping[str, str] | None = None) -> list[str]:
    """Copy the config file's settings into environment variables not already set, so
    code that reads `LOCALAGENT_MODEL` & co. honours the file (env keeps precedence).
    Returns the variables set."""
    target = os.environ if env is None else env
    values = read_config_file(config_path(target))
    set_now = []
    for name, raw in values.items():
        spec = BY_NAME[name]
        if target.get(spec.env):
            continue
        value = _parse(spec, raw, f"config {config_path(target)}", {})
        if isinstance(value, list):  # the one list setting (mcp): JSON, as _commands reads
            import json

            target[spec.env] = json.dumps(value)
        else:
            target[spec.env] = str(value).lower() if isinstance(value, bool) else str(value)
        set_now.append(spec.env)
    return set_now
