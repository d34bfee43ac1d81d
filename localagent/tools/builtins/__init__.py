"""The plugins every registry has: TextPlugin, MathPlugin, TimePlugin."""

from __future__ import annotations

from localagent.tools.builtins.math_plugin import MathPlugin
from localagent.tools.builtins.text_plugin import TextPlugin
from localagent.tools.builtins.time_plugin import TimePlugin

BUILTIN_PLUGINS: tuple[type, ...] = (TextPlugin, MathPlugin, TimePlugin)

__all__ = ["BUILTIN_PLUGINS", "MathPlugin", "TextPlugin", "TimePlugin"]
