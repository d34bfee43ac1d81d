"""Example plugins for the documented scenarios, with fixed offline data.

Used by the CLI (`localagent tools list` shows them unless `--no-examples`), the
benchmarks and the tests. Their descriptions are written for a 0.5B model to plan from.
"""

from __future__ import annotations

from localagent.tools.examples.assistant import PersonalAssistant
from localagent.tools.examples.currency import CurrencyPlugin
from localagent.tools.examples.demo import DemoPlugin
from localagent.tools.examples.weather import WeatherPlugin

EXAMPLE_PLUGINS: tuple[type, ...] = (DemoPlugin, PersonalAssistant, WeatherPlugin, CurrencyPlugin)

__all__ = ["EXAMPLE_PLUGINS", "CurrencyPlugin", "DemoPlugin", "PersonalAssistant", "WeatherPlugin"]
