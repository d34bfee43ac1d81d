"""`localagent tools list|call`, run as a user runs them (subprocess): results and errors.

Every bad input must give exactly one line on stderr, exit code 2 and no traceback.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

from localagent.samples import PROMPT_PLUGINS_DIR

WIDE = {"COLUMNS": "250"}
EXAMPLES = ("DemoPlugin.", "PersonalAssistant.", "WeatherPlugin.", "CurrencyPlugin.")


def assert_one_line_error(result, *needles: str, code: int = 2) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def plugin_file(tmp_path: Path) -> Path:
    path = tmp_path / "shop_tools.py"
    path.write_text(
        textwrap.dedent('''
        from localagent import tool

        class Shop:
            @tool(name="Price")
            def price(self, item: str, quantity: int = 1) -> float:
                """The price of some items."""
                return 0.5 * quantity

        @tool
        def tags(values: list[str]) -> int:
            """Count tags."""
            return len(values)
    ''')
    )
    return path


def test_list_shows_builtins_examples_and_plugins(plugin_file: Path, tmp_path: Path) -> None:
    r = run_cli(
        "tools",
        "list",
        "--examples",
        "--plugins",
        str(plugin_file),
        "--plugins",
        str(PROMPT_PLUGINS_DIR),
        env=WIDE,
    )
    assert r.returncode == 0, r.stderr
    for name in (
        "MathPlugin.Calculator",
        "DemoPlugin.GetInvoice",
        "Shop.Price",
        "shop_tools.tags",
        "WriterPlugin.Translate",
    ):
        assert name in r.stdout, name
    assert "quantity" in r.stdout and "default 1" in r.stdout
    r = run_cli("tools", "list", "--no-examples", "--json")
    names = [s["name"] for s in json.loads(r.stdout)]
    assert "TextPlugin.uppercase" in names and "DemoPlugin.GetInvoice" not in names
    r = run_cli("tools", "list", "--json")  # the default: no example plugins
    names = [s["name"] for s in json.loads(r.stdout)]
    assert "TextPlugin.uppercase" in names
    assert not [n for n in names if n.startswith(EXAMPLES)], names
    (tmp_path / "config.toml").write_text("examples = true\n")
    r = run_cli("tools", "list", "--json", env={"LOCALAGENT_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "WeatherPlugin.GetWeather" in [s["name"] for s in json.loads(r.stdout)]
    r = run_cli("tools", "list", "--json", env={"LOCALAGENT_EXAMPLES": "1"})
    assert "WeatherPlugin.GetWeather" in [s["name"] for s in json.loads(r.stdout)]


def test_call_prints_json(plugin_file: Path) -> None:
    r = run_cli("tools", "call", "DemoPlugin.GetInvoice", "--arg", "company=C", "--examples")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == 20000
    r = run_cli(
        "tools",
        "call",
        "Shop.Price",
        "--arg",
        "item=apple",
        "--arg",
        "quantity=4",
        "--plugins",
        str(plugin_file),
    )
    assert r.returncode == 0 and json.loads(r.stdout) == 2.0
    r = run_cli(
        "tools",
        "call",
        "shop_tools.tags",
        "--arg",
        'values=["a", "b"]',
        "--plugins",
        str(plugin_file),
    )
    assert r.returncode == 0 and json.loads(r.stdout) == 2
    r = run_cli("tools", "call", "PersonalAssistant.GetPerson", "--arg", "name=Furina",
                "--examples")
    assert json.loads(r.stdout)["age"] == 16


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ["tools", "call", "DemoPlugin.GetInvoce", "--examples"],
            ["unknown function", "DemoPlugin.GetInvoice"],
        ),
        (["tools", "call", "DemoPlugin.GetInvoice", "--examples"], ["missing argument 'company'"]),
        (
            ["tools", "call", "DemoPlugin.GetInvoice", "--examples", "--arg", "company=C",
             "--arg", "x=1"],
            ["unknown argument 'x'"],
        ),
        (
            ["tools", "call", "DemoPlugin.Total", "--examples", "--arg", "value1=lots",
             "--arg", "value2=1"],
            ["argument 'value1'", "lots"],
        ),
        (
            ["tools", "call", "DemoPlugin.Total", "--examples", "--arg", "value1"],
            ["expected name=value"],
        ),
        (
            ["tools", "call", "WeatherPlugin.GetWeather", "--arg", "city=Paris"],
            ["unknown function", "only with --examples"],
        ),
        (
            ["tools", "call", "MathPlugin.Calculator", "--arg", "expression=__import__('os')"],
            ["not allowed"],
        ),
        (
            ["tools", "call", "MathPlugin.Calculator", "--arg", "expression=9**9**9**9"],
            ["too large"],
        ),
        (["tools", "list", "--plugins", "no_such_plugin_xyz"], ["no_such_plugin_xyz"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needles: list[str]) -> None:
    assert_one_line_error(run_cli(*args), *needles)


def test_plugin_errors_are_one_line(tmp_path: Path, plugin_file: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('bad\\nplugin')\n")
    assert_one_line_error(
        run_cli("tools", "list", "--plugins", str(broken)), str(broken), "ValueError", "bad plugin"
    )
    assert_one_line_error(
        run_cli("tools", "list", "--plugins", str(plugin_file), "--plugins", str(plugin_file)),
        "duplicate function",
    )
    bad_config = tmp_path / "P" / "F"
    bad_config.mkdir(parents=True)
    (bad_config / "skprompt.txt").write_text("{{$input}} {{$style}}")
    (bad_config / "config.json").write_text("{not json")
    assert_one_line_error(
        run_cli("tools", "list", "--plugins", str(tmp_path / "P")), "config.json", "malformed JSON"
    )
    (bad_config / "config.json").write_text('{"description": "d"}')
    assert_one_line_error(
        run_cli("tools", "list", "--plugins", str(tmp_path / "P")), "style", "skprompt.txt"
    )


def test_a_failing_tool_is_exit_1() -> None:
    r = run_cli("tools", "call", "PersonalAssistant.GetPerson", "--arg", "name=Nobody",
                "--examples")
    assert_one_line_error(r, "PersonalAssistant.GetPerson failed", "Nobody", code=1)


def test_prompt_function_with_a_missing_model_is_exit_2() -> None:
    r = run_cli(
        "tools",
        "call",
        "WriterPlugin.ShortPoem",
        "--arg",
        "input=cats",
        "--plugins",
        str(PROMPT_PLUGINS_DIR),
        "--model",
        "no-such-model",
    )
    assert_one_line_error(r, "no-such-model")
