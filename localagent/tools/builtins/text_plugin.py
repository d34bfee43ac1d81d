"""TextPlugin: small string operations (Semantic Kernel's TextPlugin, same names)."""

from __future__ import annotations

from typing import Annotated

from localagent.tools.decorator import tool

Text = Annotated[str, "The text to work on."]


class TextPlugin:
    """String helpers a plan can chain: case changes, trimming, joining."""

    @tool
    def uppercase(self, input: Text) -> str:
        """Convert a text to UPPERCASE letters."""
        return input.upper()

    @tool
    def lowercase(self, input: Text) -> str:
        """Convert a text to lowercase letters."""
        return input.lower()

    @tool
    def trim(self, input: Text) -> str:
        """Remove spaces and line breaks from both ends of a text."""
        return input.strip()

    @tool
    def trim_start(self, input: Text) -> str:
        """Remove spaces and line breaks from the start of a text."""
        return input.lstrip()

    @tool
    def trim_end(self, input: Text) -> str:
        """Remove spaces and line breaks from the end of a text."""
        return input.rstrip()

    @tool
    def concat(
        self,
        input: Annotated[str, "The first text."],
        input2: Annotated[str, "The text appended after the first one."],
    ) -> str:
        """Join two texts into one, the second directly after the first."""
        return input + input2
