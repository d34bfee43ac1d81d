"""Example plugins for the documented scenarios, with fixed offline data.

Offered only when asked for (`--examples`, config `examples = true`,
`Agent(examples=True)`, `default_registry(examples=True)`) or named (a benchmark suite's
`plugins:`), so no user's question is answered from demo data. Their descriptions are
written for a 0.5B model to plan from.
"""

from __future__ import annotations

from localagent.tools.examples.assistant import PersonalAssistant
from localagent.tools.examples.currency import CurrencyPlugin
from localagent.tools.examples.demo import DemoPlugin
from localagent.tools.examples.weather import WeatherPlugin

EXAMPLE_PLUGINS: tuple[type, ...] = (DemoPlugin, PersonalAssistant, WeatherPlugin, CurrencyPlugin)

__all__ = ["EXAMPLE_PLUGINS", "CurrencyPlugin", "DemoPlugin", "PersonalAssistant", "WeatherPlugin"]
