"""A constraint on generated text, as plain data.

Kept apart from its compiled form: the grammar layer (`localagent.grammars`) builds
`Constraint`s from tool sets, the llama.cpp backend compiles them (once, cached by
`key` and tokenizer) into a logits processor. Tests with the scripted LLM can check an
output against the same `Constraint` without a model.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Constraint:
    kind: Literal["json_schema", "lark", "regex"]
    source: str  # JSON schema text, Lark grammar text, or a regular expression
    name: str = ""  # e.g. "tree-plan", for traces and error messages
    # Whether the backend may evaluate the tokens this grammar forces in one batch when
    # the `fast_forward` setting is auto (llm/fast_forward.py): set for the plan grammars.
    fast_forward: bool = False

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.kind}\0{self.source}".encode()).hexdigest()
