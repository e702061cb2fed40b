"""The tools an LLM call was offered, read from every dialect's spelling, real recordings included."""

from __future__ import annotations

import json

import pytest
from recorded_traces import FIXTURES, load

from spanscore.collector.conventions.tool_definitions import offered_tools
from spanscore.run import ToolSpec
from spanscore.runs.assembly import assemble_runs
from spanscore.storage.scored_runs import run_from_view, run_view

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = ToolSpec("get_weather", "Current weather for a city.", PARAMETERS)
WEATHER_DICT = {"name": "get_weather", "description": WEATHER.description, "parameters": PARAMETERS}


@pytest.mark.parametrize(
    ("attributes", "source"),
    [
        ({"gen_ai.tool.definitions": json.dumps([{"type": "function", **WEATHER_DICT}])}, "gen_ai.tool.definitions"),
        (
            {"ai.prompt.tools": json.dumps([json.dumps({"type": "function", "name": "get_weather",
             "description": WEATHER.description, "inputSchema": PARAMETERS})])},
            "ai.prompt.tools",
        ),
        (
            {"llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_weather",
             "description": WEATHER.description, "parameters": PARAMETERS}})},
            "llm.tools.N.tool.json_schema",
        ),
        (
            {"llm.request.functions.0.name": "get_weather", "llm.request.functions.0.description": WEATHER.description,
             "llm.request.functions.0.parameters": json.dumps(PARAMETERS)},
            "llm.request.functions.N",
        ),
    ],
)  # fmt: skip
def test_each_spelling_gives_the_same_tool(attributes: dict[str, str], source: str) -> None:
    assert offered_tools(attributes) == ((WEATHER,), source)


def test_names_only_and_index_order() -> None:
    assert offered_tools({"gen_ai.tool.definitions": '["b", "a"]'}) == (
        (ToolSpec("b"), ToolSpec("a")),
        "gen_ai.tool.definitions",
    )
    keys = {f"llm.tools.{i}.tool.json_schema": json.dumps({"name": f"t{i}"}) for i in (10, 2, 1)}
    tools, _ = offered_tools(keys) or ((), "")
    assert [t.name for t in tools] == ["t1", "t2", "t10"]


@pytest.mark.parametrize(
    "attributes",
    [{}, {"gen_ai.tool.definitions": "not json"}, {"gen_ai.tool.definitions": '[{"description": "no name"}]'},
     {"llm.tools.0.tool.json_schema": "[1, 2]"}, {"ai.prompt.tools": '"one string"'}],
)  # fmt: skip
def test_what_does_not_parse_gives_nothing(attributes: dict[str, str]) -> None:
    assert offered_tools(attributes) is None


# Recordings whose LLM spans list the tools they offered. Mastra and Strands list them on the agent
# span only (gen_ai.tool.definitions as names; gen_ai.agent.tools), the OpenAI Agents SDK not at all.
OFFERING = [
    "openinference", "openllmetry", "openllmetry_legacy", "vercel_ai", "vercel_ai6", "vercel_ai7",
    "vercel_ai7_legacy", "frameworks/langchain_openinference", "frameworks/langgraph_openinference",
    "frameworks/langchain_openllmetry", "frameworks/langgraph_openllmetry", "frameworks/pydantic_ai",
    "frameworks/llama_index_openinference", "frameworks/smolagents_openinference",
]  # fmt: skip


@pytest.mark.parametrize("name", OFFERING)
def test_recorded_llm_calls_say_which_tools_they_were_offered(name: str) -> None:
    folder, _, stem = name.rpartition("/")
    spans, logs = load(stem, FIXTURES / folder if folder else FIXTURES)
    views = [view for assembled in assemble_runs(spans, logs, span_targets={"llm"}) for view in assembled.views]
    offered = [view for view in views if view.tools]
    assert offered, f"{name}: no LLM call lists its tools"
    for view in offered:
        assert "get_weather" in [tool.name for tool in view.tools or ()], view.sources
        assert view.sources["tools"]
        # What the scorers got is what is stored and shown.
        assert run_from_view(json.loads(json.dumps(run_view(view)))).tools == view.tools
