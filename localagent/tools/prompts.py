"""Prompt functions: a template run by the local model, loaded from a directory.

The layout is Semantic Kernel's: `PluginName/FunctionName/skprompt.txt` plus an optional
`config.json` (description, input_variables, execution_settings). Templates use
`{{$input}}` and `{{$name}}`. Everything is checked at load time (a template that uses an
undeclared variable, a malformed config), so a bad prompt plugin fails when it is loaded,
not in the middle of a plan.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localagent.errors import PluginLoadError, PromptTemplateError
from localagent.llm.base import LLM
from localagent.tools.function import Tool, check_name
from localagent.tools.runtime import run_in_thread
from localagent.tools.schema import string_parameters_model, validate_with
from localagent.tools.spec import ToolSpec

PROMPT_FILE = "skprompt.txt"
CONFIG_FILE = "config.json"
_BLOCK_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_VAR_RE = re.compile(r"^\s*\$([A-Za-z_][A-Za-z0-9_]*)\s*$")
_INPUT_DESCRIPTION = "The text to work on."

LLMProvider = Callable[[], LLM]


class InputVariable(BaseModel):
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)
    name: str
    description: str = ""
    default: str | None = None
    is_required: bool = True


class ExecutionSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")
    max_tokens: int = Field(256, ge=1, le=32768)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    stop_sequences: list[str] = Field(default_factory=list)


class PromptConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")
    description: str = ""
    input_variables: list[InputVariable] = Field(default_factory=list)
    execution_settings: ExecutionSettings = Field(default_factory=ExecutionSettings)


@dataclass(frozen=True)
class PromptFunction:
    """One loaded prompt function: its template, its settings and its spec."""

    plugin: str
    name: str
    template: str
    config: PromptConfig
    source: Path

    def render(self, values: dict[str, str]) -> str:
        """Fill `{{$name}}` blocks; values are inserted once, never re-expanded."""
        return _BLOCK_RE.sub(lambda m: values.get(_variable(m.group(1)) or "", ""), self.template)

    def run(self, llm: LLM, values: dict[str, str]) -> str:
        rendered = self.render(values)
        prompt = (
            llm.format_chat([{"role": "user", "content": rendered}])
            if llm.info.chat_format
            else rendered
        )
        settings = self.config.execution_settings
        completion = llm.complete(
            prompt,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            stop=tuple(settings.stop_sequences),
        )
        return completion.text.strip()


def load_prompt_plugins(path: Path, llm: LLMProvider, lock: threading.Lock) -> list[Tool]:
    """Tools for a plugin directory, or for a folder holding several plugin directories."""
    tools: list[Tool] = []
    for plugin_dir in prompt_plugin_dirs(path):
        for function_dir in sorted(p for p in plugin_dir.iterdir() if (p / PROMPT_FILE).is_file()):
            function = load_prompt_function(function_dir, plugin=plugin_dir.name)
            tools.append(prompt_tool(function, llm, lock))
    return tools


def prompt_plugin_dirs(path: Path) -> list[Path]:
    if _has_functions(path):
        return [path]
    plugins = sorted(p for p in path.iterdir() if p.is_dir() and _has_functions(p))
    if not plugins:
        raise PluginLoadError(
            f"{path} holds no prompt functions (expected Plugin/Function/{PROMPT_FILE})"
        )
    return plugins


def _has_functions(path: Path) -> bool:
    return any(p.is_dir() and (p / PROMPT_FILE).is_file() for p in path.iterdir())


def load_prompt_function(function_dir: Path, plugin: str) -> PromptFunction:
    check_name(plugin, "plugin")
    check_name(function_dir.name, "function")
    prompt_path = function_dir / PROMPT_FILE
    template = _read_text(prompt_path)
    config = _read_config(function_dir / CONFIG_FILE)
    declared = [v.name for v in config.input_variables]
    duplicates = sorted({n for n in declared if declared.count(n) > 1})
    if duplicates:
        raise PromptTemplateError(
            f"{function_dir / CONFIG_FILE}: input variable {duplicates[0]!r} is declared twice"
        )
    for name in declared:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise PromptTemplateError(
                f"{function_dir / CONFIG_FILE}: invalid variable name {name!r}"
            )
    for used in template_variables(template, prompt_path):
        if used not in declared and used != "input":
            raise PromptTemplateError(
                f"{prompt_path}: the template uses {{{{${used}}}}} but {CONFIG_FILE} declares "
                f"no input variable {used!r}",
                hint=f"declared: {', '.join(declared) or 'none'}",
            )
    return PromptFunction(plugin, function_dir.name, template, config, function_dir)


def template_variables(template: str, source: Path | str = "template") -> list[str]:
    """The variable names a template uses, in order of first use; other blocks are errors."""
    names: list[str] = []
    for match in _BLOCK_RE.finditer(template):
        name = _variable(match.group(1))
        if name is None:
            raise PromptTemplateError(
                f"{source}: unsupported template block {match.group(0)!r} "
                "(only {{$name}} variables are supported)"
            )
        if name not in names:
            names.append(name)
    return names


def _variable(block: str) -> str | None:
    m = _VAR_RE.match(block)
    return m.group(1) if m else None


def prompt_tool(function: PromptFunction, llm: LLMProvider, lock: threading.Lock) -> Tool:
    """Wrap a prompt function as a Tool whose string arguments fill the template."""
    qualified = f"{function.plugin}.{function.name}"
    params: dict[str, tuple[str, str | None, bool]] = {}
    for var in function.config.input_variables:
        required = var.is_required and var.default is None
        params[var.name] = (
            var.description,
            var.default if var.default is not None else "",
            required,
        )
    if "input" in template_variables(function.template) and "input" not in params:
        params = {"input": (_INPUT_DESCRIPTION, None, True), **params}
    model, schema = string_parameters_model(qualified, params)
    description = function.config.description.strip() or f"Prompt function {qualified}."
    spec = ToolSpec(
        plugin=function.plugin,
        name=function.name,
        description=description,
        parameters=schema,
        returns={"type": "string"},
        kind="prompt",
    )

    def run(values: dict[str, str]) -> str:
        model_ = llm()
        with lock:  # one generation at a time: a llama.cpp context is not thread-safe
            return function.run(model_, values)

    async def call(kwargs: dict[str, Any]) -> str:
        return await run_in_thread(run, kwargs)

    return Tool(spec=spec, validator=lambda args: validate_with(model, qualified, args), call=call)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptTemplateError(f"{path}: cannot read the template ({exc})") from None


def _read_config(path: Path) -> PromptConfig:
    if not path.exists():
        return PromptConfig()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PromptTemplateError(
            f"{path}: malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptTemplateError(f"{path}: cannot read ({exc})") from None
    if not isinstance(raw, dict):
        raise PromptTemplateError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    settings = raw.get("execution_settings")
    if (
        isinstance(settings, dict)
        and settings
        and all(isinstance(v, dict) for v in settings.values())
    ):
        # Semantic Kernel keys settings by service id: {"default": {...}}
        raw = {
            **raw,
            "execution_settings": settings.get("default") or next(iter(settings.values())),
        }
    try:
        return PromptConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise PromptTemplateError(f"{path}: invalid config: {problems}") from None
