"""Tools from MCP servers (localagent/tools/mcp.py), against real servers.

Every server here is a real process started over stdio: the small `MCPServer` (FastMCP
before mcp 2) servers in tests/mcp_servers/, spoken to through the official SDK. Scripted
models drive the four planners; one test runs the default model end to end.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from typer.testing import CliRunner

from localagent import Agent
from localagent.cli import app
from localagent.errors import DuplicateFunctionError, UsageError
from localagent.llm import ScriptedLLM
from localagent.tools.mcp import (
    McpServer,
    McpServerError,
    McpToolError,
    connect_servers,
    parse_command,
    plugin_name,
    result_value,
    side_effects,
    unwrapped_returns,
)
from localagent.tools.registry import ToolRegistry, default_registry

SERVERS = REPO / "tests" / "mcp_servers"
runner = CliRunner()


def command(script: str, *args: str) -> str:
    """The command line that starts a test server with this interpreter (it has `mcp`)."""
    return shlex.join([sys.executable, str(SERVERS / script), *args])


INVENTORY = command("inventory.py")
LIBRARY = command("library.py")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def inventory():
    with McpServer(INVENTORY) as server:
        yield server


@pytest.fixture(scope="module")
def registry(inventory):
    registry = ToolRegistry()
    for tool in inventory.tools:
        registry.add_tool(tool)
    return registry


# --- listing ---------------------------------------------------------------------------


def test_lists_every_tool_with_its_schemas_under_the_servers_name(inventory):
    assert inventory.name == "Inventory" == inventory.server_name
    by_name = {s.qualified_name: s for s in inventory.specs}
    assert sorted(by_name) == [f"Inventory.{n}" for n in (
        "add_note", "count_all", "discontinue", "get_product", "get_stock", "list_skus", "reorder_level",
        "set_stock")]
    stock = by_name["Inventory.get_stock"]
    assert stock.description == "Get the number of units in stock of a product, by its SKU."
    assert stock.parameters["properties"]["sku"]["enum"] == ["X1", "K9", "B7"]
    assert stock.parameters["required"] == ["sku"]
    assert stock.returns == {"type": "integer"}  # the SDK's {"result": int} wrapper undone
    product = by_name["Inventory.get_product"].returns
    assert product["type"] == "object" and set(product["properties"]) == {"sku", "units", "price"}
    assert by_name["Inventory.list_skus"].returns == {}  # no output schema given


def test_annotations_set_side_effects_with_the_specs_defaults(inventory):
    effects = {s.name: s.side_effects for s in inventory.specs}
    assert effects == {
        "get_stock": False, "get_product": False, "count_all": False,  # readOnlyHint: true
        "set_stock": True,  # destructiveHint: true
        "add_note": True,  # readOnlyHint: false, destructiveHint: false (additive)
        "reorder_level": True,  # annotations without readOnlyHint: the default false
        "list_skus": False, "discontinue": False,  # no annotations: taken as none
    }


def test_side_effects_rule():
    from mcp.types import ToolAnnotations as A

    assert side_effects(None) is False
    assert side_effects(A()) is True  # readOnlyHint defaults to false
    assert side_effects(A(read_only_hint=True)) is False
    assert side_effects(A(read_only_hint=True, destructive_hint=True)) is True  # contradictory
    assert side_effects(A(read_only_hint=False, destructive_hint=False)) is True
    assert side_effects(A(destructive_hint=True)) is True


# --- calling ---------------------------------------------------------------------------


def test_calls_go_to_the_one_server_process(registry):
    assert registry.invoke("Inventory.get_stock", {"sku": "X1"}).value == 14
    assert registry.invoke("Inventory.get_product", {"sku": "K9"}).value == {
        "sku": "K9", "units": 3, "price": 120.0}
    assert registry.invoke("Inventory.list_skus", {}).value == ["B7", "K9", "X1"]  # JSON text
    assert registry.invoke("Inventory.set_stock", {"sku": "B7", "units": 7}).value == "B7: 7"
    assert registry.invoke("Inventory.get_stock", {"sku": "B7"}).value == 7  # same process


def test_a_tool_error_is_a_tool_error_in_the_result(registry):
    result = registry.invoke("Inventory.discontinue", {"sku": "X1"})
    assert result.value is None and result.error is not None
    assert result.error.kind == "exception"
    assert isinstance(result.error.exception, McpToolError)
    assert "cannot discontinue X1" in result.error.message


def test_a_call_past_its_timeout_is_a_timeout_and_the_session_goes_on(registry):
    slow = registry.invoke("Inventory.count_all", {"wait_seconds": 30}, timeout=0.5)
    assert slow.error is not None and slow.error.kind == "timeout"
    assert registry.invoke("Inventory.count_all", {}).value > 0


def test_a_server_that_dies_mid_run_gives_tool_errors_not_a_hang():
    registry = ToolRegistry()
    with connect_servers([command("crashy.py")], registry):
        assert registry.invoke("Crashy.echo", {"text": "hi"}).value == "hi"
        died = registry.invoke("Crashy.crash", {})
        after = registry.invoke("Crashy.echo", {"text": "hi"})
    for result in (died, after):
        assert result.error is not None and result.error.kind == "exception"
        assert result.error.message.startswith("Crashy.")
        assert "Connection closed" in result.error.message


def test_arguments_are_checked_against_the_input_schema_before_the_call(registry):
    result = registry.invoke("Inventory.get_stock", {"sku": "ZZ"})
    assert result.error is not None and result.error.kind == "invalid_arguments"
    assert '"X1", "K9", "B7"' in result.error.message
    coerced = registry.invoke("Inventory.set_stock", {"sku": "K9", "units": "4"})
    assert coerced.value == "K9: 4"  # "4" coerced to the integer the schema declares


# --- start failures, timeouts, shutdown ---------------------------------------------------


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path):
    pid_file = tmp_path / "pid"
    with pytest.raises(McpServerError, match="did not finish starting within 2 s") as info:
        McpServer(command("silent.py", "--pid-file", str(pid_file)), start_timeout=2).start()
    assert info.value.exit_code == 2 and "\n" not in info.value.one_line()
    assert gone(int(pid_file.read_text()))


def test_a_server_that_exits_reports_its_stderr_in_one_line():
    with pytest.raises(McpServerError) as info:
        McpServer(shlex.join([sys.executable, "no_such_server.py"])).start()
    line = info.value.one_line()
    assert "failed to start" in line and "no_such_server.py" in line and "\n" not in line


def test_close_stops_the_server_process_and_later_calls_fail(tmp_path):
    pid_file = tmp_path / "pid"
    server = McpServer(command("inventory.py", "--pid-file", str(pid_file))).start()
    registry = ToolRegistry()
    for tool in server.tools:
        registry.add_tool(tool)
    pid = int(pid_file.read_text())
    assert not gone(pid) and server.running
    assert registry.invoke("Inventory.get_stock", {"sku": "K9"}).value == 3
    server.close()
    assert gone(pid) and not server.running
    server.close()  # idempotent
    result = registry.invoke("Inventory.get_stock", {"sku": "K9"})
    assert result.error is not None and "not running" in result.error.message


def test_nothing_is_registered_when_one_server_fails(tmp_path):
    pid_file = tmp_path / "pid"
    registry = default_registry()
    before = registry.names()
    with pytest.raises(McpServerError):
        connect_servers([command("inventory.py", "--pid-file", str(pid_file)),
                         "no-such-mcp-command-xyz"], registry)
    assert registry.names() == before
    assert gone(int(pid_file.read_text()))  # the server that did start was stopped


def test_two_servers_with_one_name_clash_and_register_nothing():
    registry = default_registry()
    before = registry.names()
    with pytest.raises(DuplicateFunctionError, match="Inventory"):
        connect_servers([INVENTORY, INVENTORY], registry)
    assert registry.names() == before


# --- the agent, every planner ---------------------------------------------------------------

TREE = json.dumps({"reasoning": "r", "plan": {"function": "Library.get_author",
                                              "args": {"title": "Emma"}}})
SEQUENTIAL = json.dumps({"input": "", "subtasks": [
    {"function": "Library.get_author", "args": {"title": "Emma"}},
    {"function": "TextPlugin.uppercase", "args": {}}]})
REACT = ['Thought: look it up\nAction: Library.get_author\nAction Input: {"title": "Emma"}',
         "Thought: I know it\nFinal Answer: Jane Austen"]
TOOLS = [('<tool_call>\n{"name": "Library.get_author", "arguments": {"title": "Emma"}}\n'
          "</tool_call>"), "Jane Austen"]


@pytest.mark.parametrize(("planner", "outputs", "answer"), [
    ("tree", [TREE], "Jane Austen"),
    ("sequential", [SEQUENTIAL], "JANE AUSTEN"),
    ("react", REACT, "Jane Austen"),
    ("tools", TOOLS, "Jane Austen"),
])
def test_every_planner_calls_mcp_tools_through_the_executor(planner, outputs, answer):
    with Agent(ScriptedLLM(outputs), mcp=[LIBRARY]) as agent:
        assert "Library.get_author" in agent.registry
        result = agent.run("Who wrote Emma?", planner=planner)
    assert result.ok, result.error
    assert str(result.answer).strip() == answer
    assert "Jane Austen" in json.dumps(result.steps)  # the call really ran on the server


def test_nested_calls_run_concurrently_on_one_session():
    """A tree whose two lookups the executor starts together, from its event loop."""
    pages = {"function": "MathPlugin.add", "args": {
        "value1": {"function": "Library.count_pages", "args": {"title": "Dune"}},
        "value2": {"function": "Library.count_pages", "args": {"title": "Beloved"}}}}
    llm = ScriptedLLM([json.dumps({"reasoning": "r", "plan": pages})])
    with Agent(llm, mcp=[LIBRARY], techniques="plain") as agent:
        result = agent.run("Pages of Dune and Beloved together?", planner="tree")
    assert result.ok, result.error
    assert result.answer == 412 + 324


def test_agent_close_stops_its_servers(tmp_path):
    pid_file = tmp_path / "pid"
    agent = Agent(ScriptedLLM(), mcp=[command("inventory.py", "--pid-file", str(pid_file))])
    pid = int(pid_file.read_text())
    assert not gone(pid)
    agent.close()
    assert gone(pid)


# --- the command line -------------------------------------------------------------------------


def test_tools_list_lists_the_servers_tools():
    result = runner.invoke(app, ["tools", "list", "--json", "--mcp", INVENTORY,
                                 "--mcp", LIBRARY])
    assert result.exit_code == 0, result.output
    names = {s["name"] for s in json.loads(result.output)}
    assert {"Inventory.get_stock", "Inventory.set_stock", "Library.get_author",
            "Library.count_pages", "MathPlugin.add"} <= names


def test_tools_call_calls_through_the_server():
    result = runner.invoke(app, ["tools", "call", "Library.count_pages", "--arg",
                                 "title=Ulysses", "--mcp", LIBRARY])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == 730


def test_exec_replays_a_saved_plan_over_the_servers_tools(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"function": "MathPlugin.add", "args": {
        "value1": {"function": "Library.count_pages", "args": {"title": "Ulysses"}},
        "value2": 1}}))
    result = runner.invoke(app, ["exec", str(plan), "--json", "--mcp", LIBRARY])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"] == 731


@pytest.fixture
def scripted(monkeypatch):
    """The CLI's model is a scripted one; every function offered (no embedding filter)."""
    import localagent.llm

    llm = ScriptedLLM()
    monkeypatch.setattr(localagent.llm, "load_llm", lambda *a, **k: llm)
    monkeypatch.setenv("LOCALAGENT_MAX_TOOLS", "0")
    return llm


def test_run_stops_the_server_when_the_command_ends(scripted, tmp_path):
    pid_file = tmp_path / "pid"
    scripted.enqueue(json.dumps({"reasoning": "r", "plan": {
        "function": "Inventory.get_stock", "args": {"sku": "K9"}}}))
    result = runner.invoke(app, ["run", "How many K9 are in stock?", "--json", "--mcp",
                                 command("inventory.py", "--pid-file", str(pid_file))])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"] == 3
    assert gone(int(pid_file.read_text()))


def test_plan_and_chat_take_mcp_servers(scripted):
    scripted.enqueue(TREE)
    planned = runner.invoke(app, ["plan", "Who wrote Emma?", "--mcp", LIBRARY])
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.output)["root"]["function"] == "Library.get_author"
    scripted.enqueue(TREE)
    chat = runner.invoke(app, ["chat", "--mcp", LIBRARY], input="Who wrote Emma?\n")
    assert chat.exit_code == 0, chat.output
    assert "answer: Jane Austen" in chat.output


def test_the_config_setting_starts_servers_too(monkeypatch):
    monkeypatch.setenv("LOCALAGENT_MCP", json.dumps([LIBRARY]))
    result = runner.invoke(app, ["tools", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert "Library.get_author" in {s["name"] for s in json.loads(result.output)}
    monkeypatch.setenv("LOCALAGENT_MCP", "[1, 2]")
    bad = runner.invoke(app, ["tools", "list"])
    assert bad.exit_code == 2 and "mcp" in bad.output


def test_the_config_file_sets_servers_and_their_start_timeout(monkeypatch, tmp_path):
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path))
    for name in ("LOCALAGENT_MCP", "LOCALAGENT_MCP_TIMEOUT"):  # restored after the test
        monkeypatch.setenv(name, "")
    silent = command("silent.py")
    (tmp_path / "config.toml").write_text(f"mcp = [{json.dumps(silent)}]\nmcp_timeout = 1.5\n")
    result = runner.invoke(app, ["tools", "list"])
    assert result.exit_code == 2, result.output
    assert "did not finish starting within 1.5 s" in result.output


def test_tools_search_ranks_mcp_tools_with_the_rest():
    """The real embedding model and Chroma index the MCP tools like any others."""
    result = runner.invoke(app, ["tools", "search", "who is the author of a book", "--top-k",
                                 "3", "--mcp", LIBRARY])
    assert result.exit_code == 0, result.output
    first = next(line for line in result.output.splitlines() if line.strip().startswith("│ 1"))
    assert "Library.get_author" in first, result.output


def test_a_bad_server_command_is_one_line_and_exit_2():
    """In a real process: exit code 2 and one line on stderr, no traceback."""
    proc = run_cli("tools", "list", "--mcp", "no-such-mcp-command-xyz", timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: MCP server"), proc.stderr
    assert "no-such-mcp-command-xyz" in lines[0]


@pytest.mark.parametrize(("mcp", "says"), [
    (shlex.join([sys.executable, "-c", "import sys; sys.exit(3)"]), "failed to start"),
    ("'unbalanced", "No closing quotation"),
])
def test_other_bad_server_commands_exit_2(mcp, says):
    result = runner.invoke(app, ["run", "g", "--mcp", mcp])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines


# --- the pure parts ------------------------------------------------------------------------


def test_commands_names_and_results():
    assert parse_command('python "my server.py" --x') == ["python", "my server.py", "--x"]
    with pytest.raises(UsageError):
        parse_command("   ")
    assert plugin_name("mcp-server", ["x"]) == "mcp_server"
    assert plugin_name("", ["python", "tools/shop.py", "--port"]) == "shop"
    assert plugin_name("3d", ["x"]) == "_3d"
    wrapped = {"type": "object", "properties": {"result": {"type": "integer", "title": "R"}},
               "required": ["result"]}
    assert unwrapped_returns(wrapped) == ({"type": "integer"}, True)
    assert unwrapped_returns(None) == ({}, False)
    obj = {"type": "object", "properties": {"result": {"type": "integer"}, "n": {}}}
    assert unwrapped_returns(obj) == (obj, False)

    from mcp.types import CallToolResult, TextContent

    def text(*texts: str, error: bool = False) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=t) for t in texts], is_error=error)

    assert result_value(text('{"a": 1}'), "P.f") == {"a": 1}
    assert result_value(text("plain words"), "P.f") == "plain words"
    assert result_value(text("1", "2"), "P.f") == [1, 2]
    assert result_value(CallToolResult(content=[], structured_content={"result": 5}), "P.f",
                        unwrap=True) == 5
    with pytest.raises(McpToolError, match="P.f: went wrong"):
        result_value(text("went wrong", error=True), "P.f")


# --- the default model, end to end ------------------------------------------------------------


def test_real_model_run_with_an_mcp_server(small_model_path):
    """`localagent run GOAL --mcp "python tests/mcp_servers/library.py"`: the default model,
    the default planner (tree) and filter, the server started and stopped by the command."""
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = run_cli("run", "Who wrote the novel Beloved?", "--mcp",
                   "python tests/mcp_servers/library.py", "--json", env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["answer"] == "Toni Morrison", data
    calls = [s["function"] for s in data["steps"] if s.get("kind") == "call_finished"]
    assert calls == ["Library.get_author"], data["steps"]
