"""Sample data shipped with localagent, written by us.

`PROMPT_PLUGINS_DIR` holds Semantic-Kernel-style prompt plugins (WriterPlugin,
SummarizePlugin): load them with `ToolRegistry.load(PROMPT_PLUGINS_DIR)` or
`localagent tools list --plugins <that path>`.
"""

from __future__ import annotations

from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parent
PROMPT_PLUGINS_DIR = SAMPLES_DIR / "prompt_plugins"
