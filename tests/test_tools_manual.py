"""Manuals for prompts and OpenAI tool schemas, rendered from the same specs."""

from __future__ import annotations

from localagent.tools.manual import FOOTER, HEADER, openai_tools, render_manual
from localagent.tools.registry import default_registry


def test_manual_lists_names_descriptions_args_and_returns() -> None:
    registry = default_registry(examples=True)
    text = render_manual(
        registry.specs(
            ["DemoPlugin.GetInvoice", "TimePlugin.add_days", "PersonalAssistant.ListPeople"]
        )
    )
    assert text.startswith(HEADER) and text.endswith(FOOTER)
    assert "DemoPlugin.GetInvoice\n  description: Get the invoice amount" in text
    assert '- company (one of "A", "B", "C", "D", "E", "F"; required): The company' in text
    assert "  returns: integer" in text
    assert "- date (string or null; default null): A date as YYYY-MM-DD" in text
    assert "PersonalAssistant.ListPeople" in text and "args: none" in text
    assert "returns: list of string" in text
    # Sorted input order is kept: the caller decides the order.
    assert text.index("DemoPlugin.GetInvoice") < text.index("PersonalAssistant.ListPeople")


def test_openai_tools_use_qualified_names_and_the_same_schema() -> None:
    registry = default_registry(examples=True)
    specs = registry.specs(["MathPlugin.Calculator", "CurrencyPlugin.ConvertCurrency"])
    tools = openai_tools(specs)
    assert [t["function"]["name"] for t in tools] == [
        "CurrencyPlugin.ConvertCurrency",
        "MathPlugin.Calculator",
    ]
    assert all(t["type"] == "function" for t in tools)
    assert tools[0]["function"]["parameters"] is specs[0].parameters
    assert tools[1]["function"]["description"] == specs[1].description
    assert openai_tools(specs, separator="_")[1]["function"]["name"] == "MathPlugin_Calculator"
