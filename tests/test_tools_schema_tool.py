"""Tools described by JSON schema: names, schemas, validation, calls, stubs, registry."""

from __future__ import annotations

import asyncio
import threading

import pytest

from localagent.errors import InvalidArgumentsError, PluginLoadError
from localagent.tools import RecordingStub, Tool, schema_tool, schema_tools
from localagent.tools.registry import ToolRegistry

PARAMS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "description": "How many."},
        "x": {"type": "number"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
    },
    "required": ["n", "x"],
}


def inner(name: str = "math.scale", **extra) -> dict:
    return {"name": name, "description": "Scale a value.", "parameters": PARAMS, **extra}


def wrapped(name: str = "math.scale", **extra) -> dict:
    return {"type": "function", "function": inner(name, **extra)}


# --- names and schemas ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "plugin", "qualified"),
    [
        ("math.factorial", None, "math.factorial"),
        ("factorial", None, "functions.factorial"),
        ("factorial", "mine", "mine.factorial"),
        ("math.factorial", "mine", "mine.factorial"),  # explicit plugin wins
        ("get-weather", None, "functions.get_weather"),
        ("weather-api.get current", None, "weather_api.get_current"),
        ("a.b.c", None, "a_b.c"),
    ],
)
def test_names(name: str, plugin: str | None, qualified: str) -> None:
    tool = schema_tool(inner(name), plugin=plugin)
    assert isinstance(tool, Tool)
    assert tool.spec.qualified_name == qualified


@pytest.mark.parametrize("name", ["1st", "math.2nd", "", None])
def test_unusable_names_raise_one_line(name) -> None:
    with pytest.raises(PluginLoadError) as info:
        schema_tool({"name": name, "parameters": PARAMS})
    assert "\n" not in str(info.value)


def test_bare_and_wrapped_give_the_same_spec_shaped_like_python_tools() -> None:
    bare, full = schema_tool(inner()).spec, schema_tool(wrapped()).spec
    assert bare == full
    assert bare.description == "Scale a value."
    assert list(bare.parameters) == ["type", "properties", "required", "additionalProperties"]
    assert bare.parameters["additionalProperties"] is False
    assert bare.parameters["properties"] == PARAMS["properties"]
    assert "additionalProperties" not in PARAMS  # the caller's schema is not changed

    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    python = Tool.from_function(add, plugin="math").spec
    described = schema_tool({
        "name": "math.add", "description": "Add two numbers.", "returns": {"type": "number"},
        "parameters": {"type": "object", "properties": {"a": {"type": "number"},
                                                        "b": {"type": "number"}},
                       "required": ["a", "b"]}}).spec
    assert described.content_hash == python.content_hash


def test_additional_properties_kept_when_given() -> None:
    params = {**PARAMS, "additionalProperties": True}
    tool = schema_tool({"name": "f", "parameters": params})
    assert tool.spec.parameters["additionalProperties"] is True
    assert tool.validator({"n": 1, "x": 1, "extra": 2})["extra"] == 2


def test_returns_and_output_schema() -> None:
    returns = {"type": "object", "properties": {"value": {"type": "number"}}}
    assert schema_tool(inner(returns=returns)).spec.returns == returns
    assert schema_tool(wrapped(output_schema=returns)).spec.returns == returns
    assert schema_tool(inner()).spec.returns == {}


def test_no_parameters_means_no_arguments() -> None:
    tool = schema_tool({"name": "now", "description": "The time."})
    assert tool.spec.parameters["properties"] == {}
    assert tool.validator({}) == {}


@pytest.mark.parametrize(
    "function",
    [
        {"name": "f", "parameters": {"type": "dict", "properties": {}}},
        {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "int"}}}},
        {"name": "f", "parameters": {"type": "object", "properties": {}, "required": ["a"]}},
        {"type": "retrieval", "function": {"name": "f"}},
        {"name": "f", "returns": "number"},
        ["not", "a", "mapping"],
    ],
)
def test_malformed_schemas_raise_plugin_load_error(function) -> None:
    with pytest.raises(PluginLoadError) as info:
        schema_tool(function)
    assert "\n" not in str(info.value)


# --- validation ---------------------------------------------------------------------------


def test_validation_lists_every_problem() -> None:
    tool = schema_tool(inner())
    with pytest.raises(InvalidArgumentsError) as info:
        tool.validator({"n": "many", "unit": "k", "colour": "red"})
    message = str(info.value)
    assert message.startswith("invalid arguments for math.scale: ")
    for problem in ("argument 'n': expected integer (got 'many')",
                    "argument 'unit': must be one of \"c\", \"f\" (got 'k')",
                    "missing argument 'x'", "unknown argument 'colour'"):
        assert problem in message
    assert info.value.hint == "arguments: n, x, unit"
    with pytest.raises(InvalidArgumentsError, match="must be an object"):
        tool.validator(["n", 1])  # type: ignore[arg-type]


def test_nested_problems_name_their_path() -> None:
    params = {"type": "object", "required": ["point"], "properties": {"point": {
        "type": "object", "required": ["lat"], "additionalProperties": False,
        "properties": {"lat": {"type": "number"}}}}}
    tool = schema_tool({"name": "geo.where", "parameters": params})
    with pytest.raises(InvalidArgumentsError) as info:
        tool.validator({"point": {"lng": 1}})
    assert "missing argument 'point.lat'" in str(info.value)
    assert "unknown argument 'point.lng'" in str(info.value)


def test_coercion_like_python_tools_and_defaults_filled() -> None:
    params = {"type": "object", "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "flag": {"type": "boolean"},
        "zip": {"type": "string"}, "xs": {"type": "array", "items": {"type": "number"}},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "either": {"type": ["integer", "string"]}, "unit": {"type": "string", "default": "c"},
    }}
    tool = schema_tool({"name": "f", "parameters": params})
    out = tool.validator({"n": " 3 ", "x": 2, "flag": "True", "zip": 94107, "xs": ["1.5", 2],
                          "maybe": "4", "either": "7"})
    assert out == {"n": 3, "x": 2.0, "flag": True, "zip": "94107", "xs": [1.5, 2.0],
                   "maybe": 4, "either": "7", "unit": "c"}
    assert isinstance(out["x"], float) and isinstance(out["n"], int)
    assert tool.validator({"n": 4.0})["n"] == 4 and isinstance(tool.validator({"n": 4.0})["n"], int)
    for bad in ({"n": "3.5"}, {"n": True}, {"x": "nan"}, {"flag": "maybe"}):
        with pytest.raises(InvalidArgumentsError):
            tool.validator(bad)


# --- calls ----------------------------------------------------------------------------------


def test_sync_and_async_callables_get_keyword_arguments() -> None:
    seen = []

    def scale(n: int, x: float, unit: str) -> float:
        seen.append(threading.current_thread().name)
        return n * x

    async def ascale(**kwargs) -> str:
        return f"{kwargs['n']}x{kwargs['x']}{kwargs['unit']}"

    sync_tool, async_tool = schema_tool(inner(), scale), schema_tool(inner(), ascale)
    args = sync_tool.validator({"n": "2", "x": "1.5"})
    assert asyncio.run(sync_tool.call(args)) == 3.0
    assert seen and seen[0] != threading.main_thread().name  # a worker thread
    assert asyncio.run(async_tool.call(args)) == "2x1.5c"


def test_recording_stub_records_and_returns_placeholders() -> None:
    stub = RecordingStub()
    returns = {"type": "object", "properties": {
        "city": {"type": "string"}, "temp": {"type": "number"}, "rain": {"type": "boolean"},
        "unit": {"enum": ["c", "f"]}, "hours": {"type": "array"}}}
    weather = schema_tool({"name": "weather.now", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}, "returns": returns}, stub)
    scale = schema_tool(inner(), stub)
    count = schema_tool({"name": "count", "returns": {"type": "integer"}}, stub)
    assert asyncio.run(weather.call({"city": "Athens"})) == {
        "city": "<weather.now.city>", "temp": 1, "rain": True, "unit": "c", "hours": []}
    assert asyncio.run(scale.call({"n": 1, "x": 2.0, "unit": "c"})) == "<result of math.scale>"
    assert asyncio.run(count.call({})) == 1
    assert stub.calls == [("weather.now", {"city": "Athens"}),
                          ("math.scale", {"n": 1, "x": 2.0, "unit": "c"}),
                          ("functions.count", {})]
    assert stub.calls_to("math.scale") == [{"n": 1, "x": 2.0, "unit": "c"}]
    stub.clear()
    assert stub.calls == []


def test_recording_stub_is_thread_safe() -> None:
    stub = RecordingStub()
    record = stub.for_function("p.f")
    threads = [threading.Thread(target=lambda i=i: [record(i=i, j=j) for j in range(200)])
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stub.calls) == 1600
    assert {(a["i"], a["j"]) for _, a in stub.calls} == {(i, j) for i in range(8)
                                                         for j in range(200)}


def test_schema_tools_share_a_stub_or_map_names_to_callables() -> None:
    functions = [inner("math.scale"), wrapped("get-size")]
    stub = RecordingStub()
    tools = schema_tools(functions, stub, plugin="p")
    assert [t.qualified_name for t in tools] == ["p.scale", "p.get_size"]
    for tool in tools:
        asyncio.run(tool.call({"n": 1, "x": 1.0}))
    assert [name for name, _ in stub.calls] == ["p.scale", "p.get_size"]
    mapped = schema_tools(functions, {"math.scale": lambda **a: "s",
                                      "functions.get_size": lambda **a: "g"})
    assert [asyncio.run(t.call({})) for t in mapped] == ["s", "g"]
    with pytest.raises(PluginLoadError, match="no callable given for 'get-size'"):
        schema_tools(functions, {"math.scale": lambda **a: "s"})
    assert len(schema_tools(functions)) == 2  # None: placeholders


def test_registry_invoke_validates_calls_and_reports_errors_as_data() -> None:
    stub = RecordingStub()
    registry = ToolRegistry()
    prices = {"apple": 0.5, "pear": 0.75}
    registry.add_tool(schema_tool({"name": "shop.get_price", "parameters": {
        "type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}},
        lambda item: prices[item]))
    for tool in schema_tools([inner()], stub):
        registry.add_tool(tool)
    assert registry.names() == ["math.scale", "shop.get_price"]
    assert registry.invoke("shop.get_price", {"item": "pear"}).value == 0.75
    result = registry.invoke("math.scale", {"n": "2", "x": 3})
    assert result.ok and result.args == {"n": 2, "x": 3.0, "unit": "c"}
    assert stub.calls == [("math.scale", {"n": 2, "x": 3.0, "unit": "c"})]
    bad = registry.invoke("math.scale", {"n": "two"})
    assert bad.error is not None and bad.error.kind == "invalid_arguments"
    assert "missing argument 'x'" in bad.error.message
    assert len(stub.calls) == 1  # an invalid call never reaches the function
    failed = registry.invoke("shop.get_price", {"item": "plum"})
    assert failed.error is not None and failed.error.kind == "exception"


def test_exported_from_the_packages() -> None:
    import localagent
    import localagent.tools.from_schema  # imported, the submodule must not shadow the names
    from localagent import tools

    assert tools.schema_tool is localagent.schema_tool is schema_tool
    assert tools.schema_tools is schema_tools and localagent.RecordingStub is RecordingStub


# --- the real default model -----------------------------------------------------------------


def test_agent_plans_and_calls_a_schema_tool_on_the_real_model(small_llm) -> None:
    """Schema tools go through the same planner, grammar and executor as Python tools."""
    from localagent.agent import Agent
    from localagent.planners.base import PlannerSettings

    prices = {"apple": 0.5, "pear": 0.75, "plum": 0.4}
    asked: list[str] = []

    def get_price(item: str) -> float:
        asked.append(item)
        return prices[item]

    stub = RecordingStub()
    registry = ToolRegistry(small_llm)
    registry.add_tool(schema_tool({"type": "function", "function": {
        "name": "shop.get_price", "description": "Get the unit price of an item, in dollars.",
        "parameters": {"type": "object", "required": ["item"], "properties": {
            "item": {"type": "string", "description": "The item's name"}}},
        "returns": {"type": "number"}}}, get_price))
    registry.add_tool(schema_tool({
        "name": "math.add", "description": "Add two numbers.", "returns": {"type": "number"},
        "parameters": {"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}}}}, stub))
    agent = Agent(small_llm, registry=registry,
                  settings=PlannerSettings(temperature=0.0, seed=0))
    result = agent.run("What is the price of a pear?", planner="tree")
    assert asked == ["pear"], result.to_dict()
    assert result.answer == 0.75, result.to_dict()
    assert stub.calls == []
