"""Models: the `LLM` interface, the llama.cpp backend, the catalog, a scripted test double.

`LlamaCppLLM` is resolved lazily so that `import localagent.llm` does not import
llama_cpp (the CLI's `--help` and the scripted-LLM tests stay fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localagent.llm.assemble import ensure_model, is_installed, model_file
from localagent.llm.base import LLM, Completion, Message, ModelInfo, Usage
from localagent.llm.catalog import (
    Catalog,
    CatalogEntry,
    default_model_name,
    load_catalog,
)
from localagent.llm.loader import load_llm, physical_cores, resolve_model
from localagent.llm.scripted import ScriptedLLM

if TYPE_CHECKING:
    from localagent.llm.llama import LlamaCppLLM

__all__ = [
    "LLM",
    "Catalog",
    "CatalogEntry",
    "Completion",
    "LlamaCppLLM",
    "Message",
    "ModelInfo",
    "ScriptedLLM",
    "Usage",
    "default_model_name",
    "ensure_model",
    "is_installed",
    "load_catalog",
    "load_llm",
    "model_file",
    "physical_cores",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    if name == "LlamaCppLLM":
        from localagent.llm.llama import LlamaCppLLM

        return LlamaCppLLM
    raise AttributeError(name)
