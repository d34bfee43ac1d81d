"""Prompt functions: the sample plugins, template checks at load time, and a real model run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from localagent.errors import (
    DuplicateFunctionError,
    InvalidArgumentsError,
    PluginLoadError,
    PromptTemplateError,
)
from localagent.llm.scripted import ScriptedLLM
from localagent.samples import PROMPT_PLUGINS_DIR
from localagent.tools.registry import ToolRegistry, default_registry

SAMPLE_FUNCTIONS = {
    "WriterPlugin.Brainstorm",
    "WriterPlugin.ShortPoem",
    "WriterPlugin.Shakespeare",
    "WriterPlugin.Translate",
    "WriterPlugin.Acronym",
    "WriterPlugin.EmailGen",
    "SummarizePlugin.Summarize",
    "SummarizePlugin.Topics",
}


def write_function(
    root: Path, template: str, config: object | str | None, plugin: str = "P", name: str = "F"
) -> Path:
    folder = root / plugin / name
    folder.mkdir(parents=True)
    (folder / "skprompt.txt").write_text(template)
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config)
        (folder / "config.json").write_text(text)
    return root / plugin


def test_sample_plugins_load_with_specs() -> None:
    registry = ToolRegistry()
    specs = registry.load(PROMPT_PLUGINS_DIR)
    assert {s.qualified_name for s in specs} == SAMPLE_FUNCTIONS
    assert all(
        s.kind == "prompt" and s.returns == {"type": "string"} and s.description for s in specs
    )
    translate = registry.spec("WriterPlugin.Translate").parameters
    assert translate["required"] == ["input"]
    assert translate["properties"]["language"]["default"] == "French"
    assert translate["additionalProperties"] is False
    # One plugin folder on its own also loads.
    alone = ToolRegistry().load(PROMPT_PLUGINS_DIR / "SummarizePlugin")
    assert {s.name for s in alone} == {"Summarize", "Topics"}


def test_invocation_renders_wraps_and_uses_settings() -> None:
    llm = ScriptedLLM(["  Bonjour le monde  \n"])
    registry = default_registry([PROMPT_PLUGINS_DIR], llm=llm, examples=False)
    result = registry.invoke(
        "WriterPlugin.Translate", {"input": "Hello world", "language": "French"}
    )
    assert result.ok and result.value == "Bonjour le monde"
    request = llm.requests[0]
    assert "Translate the text below into French." in request.prompt
    assert "Text: Hello world" in request.prompt
    assert request.prompt.startswith("<|im_start|>user\n")  # the model's chat template
    assert request.max_tokens == 200 and request.temperature == 0.0


def test_defaults_fill_template_and_base_models_get_raw_prompt() -> None:
    llm = ScriptedLLM(["Dear team"], chat_format=None)
    registry = ToolRegistry(llm=lambda: llm)  # a factory, resolved at first use
    registry.load(PROMPT_PLUGINS_DIR)
    assert registry.invoke("WriterPlugin.EmailGen", {"input": "meeting moved"}).value == "Dear team"
    prompt = llm.requests[0].prompt
    assert "email to the team" in prompt and "sign-off from me" in prompt
    assert not prompt.startswith("<|im_start|>")
    assert registry.llm is llm


def test_values_are_inserted_once_not_re_expanded() -> None:
    llm = ScriptedLLM(["ok"])
    registry = ToolRegistry(llm=llm)
    registry.load(PROMPT_PLUGINS_DIR)
    registry.invoke("WriterPlugin.Translate", {"input": "{{$language}}", "language": "German"})
    assert "Text: {{$language}}" in llm.requests[0].prompt


def test_missing_model_and_bad_arguments_are_data() -> None:
    registry = ToolRegistry()
    registry.load(PROMPT_PLUGINS_DIR)
    no_model = registry.invoke("WriterPlugin.ShortPoem", {"input": "cats"})
    assert no_model.error is not None and "need a model" in no_model.error.message
    with pytest.raises(InvalidArgumentsError, match="missing argument 'input'"):
        registry.validate_args("WriterPlugin.ShortPoem", {"topic": "cats"})
    assert registry.validate_args("WriterPlugin.ShortPoem", {"input": 42}) == {"input": "42"}


def test_undeclared_variable_fails_at_load(tmp_path: Path) -> None:
    plugin = write_function(
        tmp_path,
        "Say {{$input}} in {{$tone}}.",
        {"description": "d", "input_variables": [{"name": "input"}]},
    )
    with pytest.raises(PromptTemplateError) as info:
        ToolRegistry().load(plugin)
    assert "tone" in str(info.value) and "skprompt.txt" in str(info.value)


def test_input_is_implicit_and_config_is_optional(tmp_path: Path) -> None:
    plugin = write_function(tmp_path, "Echo: {{ $input }}", None)
    registry = ToolRegistry(llm=ScriptedLLM(["x"]))
    [spec] = registry.load(plugin)
    assert spec.qualified_name == "P.F" and spec.parameters["required"] == ["input"]


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ('{"description": "d", ', "malformed JSON"),
        ("[1, 2]", "expected a JSON object"),
        ({"input_variables": [{"description": "no name"}]}, "input_variables.0.name"),
        ({"execution_settings": {"max_tokens": "lots"}}, "max_tokens"),
        ({"execution_settings": {"default": {"temperature": 9}}}, "temperature"),
        ({"input_variables": [{"name": "input"}, {"name": "input"}]}, "declared twice"),
    ],
)
def test_malformed_config_names_the_file(tmp_path: Path, config: object, needle: str) -> None:
    plugin = write_function(tmp_path, "{{$input}}", config)
    with pytest.raises(PromptTemplateError) as info:
        ToolRegistry().load(plugin)
    assert needle in str(info.value) and str(plugin / "F" / "config.json") in str(info.value)


def test_unsupported_blocks_and_empty_folders(tmp_path: Path) -> None:
    plugin = write_function(tmp_path, "{{Other.Function $input}}", None)
    with pytest.raises(PromptTemplateError, match="unsupported template block"):
        ToolRegistry().load(plugin)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PluginLoadError, match="no prompt functions"):
        ToolRegistry().load(empty)


def test_copied_samples_clash_with_loaded_ones(tmp_path: Path) -> None:
    registry = ToolRegistry()
    registry.load(PROMPT_PLUGINS_DIR)
    shutil.copytree(PROMPT_PLUGINS_DIR / "WriterPlugin", tmp_path / "WriterPlugin")
    with pytest.raises(DuplicateFunctionError):
        registry.load(tmp_path / "WriterPlugin")


def test_sample_prompt_function_on_the_real_default_model(small_llm) -> None:
    """Translate with the real default model: non-empty, and not the input echoed back."""
    registry = ToolRegistry(llm=small_llm)
    registry.load(PROMPT_PLUGINS_DIR)
    text = "Good morning, my friend."
    result = registry.invoke("WriterPlugin.Translate", {"input": text, "language": "Spanish"})
    assert result.ok, result.error
    assert result.value and result.value.strip() != text
    assert any(word in result.value.lower() for word in ("buenos", "buen", "amigo", "días", "dias"))
