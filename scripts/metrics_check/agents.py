"""One small agent per framework, run inside that framework's own venv by ``check.py``.

It imports nothing from spanscore or the tests: the venv holds only the framework and its OpenTelemetry
exporters. Each agent sets its telemetry up the way the framework's documentation tells a user to (its
default, metrics included), asks the fake model at ``FAKE_MODEL_URL`` one question that calls one tool,
then shuts its providers down so the last metric export happens before the process ends. Where the
telemetry goes is left to the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` and friends), as in a
real app.

    python agents.py {openlit,strands,google_adk,semantic_kernel}
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

MODEL = "gpt-4o-mini"
SYSTEM = "You are a weather assistant. Use the get_weather tool."
QUESTION = "What is the weather in Paris?"
AGENT_NAME = "weather_agent"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"It is sunny and 22 C in {city}."


def _url() -> str:
    return os.environ["FAKE_MODEL_URL"]


def run_openlit() -> None:
    """``openlit.init()`` with its defaults: traces and metrics over OTLP/HTTP to the endpoint variable.

    ``pricing_json`` is given so that nothing is fetched from the internet (OpenLIT otherwise downloads a
    price list at start).
    """
    import openlit  # type: ignore[import-not-found]
    from openai import OpenAI  # type: ignore[import-not-found]

    openlit.init(application_name=os.environ["OTEL_SERVICE_NAME"], pricing_json=os.environ["OPENLIT_PRICES"])
    client = OpenAI(base_url=_url(), api_key="test-key", max_retries=0)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": get_weather("Paris")})
    client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    _shutdown_globals()


def run_strands() -> None:
    """``StrandsTelemetry().setup_otlp_exporter().setup_meter(enable_otlp_exporter=True)``, as its docs show."""
    from strands import Agent, tool  # type: ignore[import-not-found]
    from strands.models.openai import OpenAIModel  # type: ignore[import-not-found]
    from strands.telemetry import StrandsTelemetry  # type: ignore[import-not-found]

    telemetry = StrandsTelemetry().setup_otlp_exporter()
    telemetry.setup_meter(enable_otlp_exporter=True)
    model = OpenAIModel(client_args={"base_url": _url(), "api_key": "test-key", "max_retries": 0}, model_id=MODEL)
    agent = Agent(model=model, tools=[tool(get_weather)], system_prompt=SYSTEM, name=AGENT_NAME, callback_handler=None)
    agent(QUESTION)
    _shutdown_globals()


def run_google_adk() -> None:
    """ADK's own OTel set-up (``maybe_set_otel_providers``), which exports to ``OTEL_EXPORTER_OTLP_*``.

    That is what ``adk web`` and ``adk api_server`` call at start; an app of its own calls it the same way.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list from the internet
    from google.adk.agents import LlmAgent  # type: ignore[import-not-found]
    from google.adk.models.lite_llm import LiteLlm  # type: ignore[import-not-found]
    from google.adk.runners import Runner  # type: ignore[import-not-found]
    from google.adk.sessions import InMemorySessionService  # type: ignore[import-not-found]
    from google.adk.telemetry.setup import maybe_set_otel_providers  # type: ignore[import-not-found]
    from google.genai import types  # type: ignore[import-not-found]

    maybe_set_otel_providers()
    model = LiteLlm(model=f"openai/{MODEL}", api_base=_url(), api_key="test-key")
    agent = LlmAgent(name=AGENT_NAME, model=model, instruction=SYSTEM, tools=[get_weather])
    sessions = InMemorySessionService()
    runner = Runner(app_name="weather_app", agent=agent, session_service=sessions)

    async def turn() -> None:
        await sessions.create_session(app_name="weather_app", user_id="user-1", session_id="session-1")
        message = types.Content(role="user", parts=[types.Part(text=QUESTION)])
        async for _event in runner.run_async(user_id="user-1", session_id="session-1", new_message=message):
            pass

    asyncio.run(turn())
    _shutdown_globals()


def run_semantic_kernel() -> None:
    """The providers of Semantic Kernel's telemetry sample (OTLP over gRPC for spans and metrics), then an agent.

    Semantic Kernel sets no provider itself; its sample installs a MeterProvider with a periodic OTLP
    reader and a ``View`` that keeps every ``semantic_kernel*`` instrument.
    """
    from openai import AsyncOpenAI
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter  # type: ignore[import-not-found]
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # type: ignore[import-not-found]
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.metrics.view import DropAggregation, View
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from semantic_kernel.agents import ChatCompletionAgent  # type: ignore[import-not-found]
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion  # type: ignore[import-not-found]
    from semantic_kernel.functions import kernel_function  # type: ignore[import-not-found]

    resource = Resource.create()  # OTEL_SERVICE_NAME
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    views = [View(instrument_name="*", aggregation=DropAggregation()), View(instrument_name="semantic_kernel*")]
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=1000)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader], resource=resource, views=views))

    class WeatherPlugin:
        @kernel_function(description="Current weather for a city.")  # type: ignore[misc]
        def get_weather(self, city: str) -> str:
            return get_weather(city)

    client = AsyncOpenAI(base_url=_url(), api_key="test-key", max_retries=0)
    agent = ChatCompletionAgent(
        service=OpenAIChatCompletion(ai_model_id=MODEL, async_client=client),
        name=AGENT_NAME,
        instructions=SYSTEM,
        plugins=[WeatherPlugin()],
    )
    asyncio.run(agent.get_response(messages=QUESTION))
    _shutdown_globals()


def _shutdown_globals() -> None:
    """Flush and stop the global providers, so the last metrics are exported (and any error logged) now."""
    from opentelemetry import metrics, trace

    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        shutdown: Callable[[], object] | None = getattr(provider, "shutdown", None)
        if shutdown is not None:
            shutdown()


AGENTS: dict[str, Callable[[], None]] = {
    "openlit": run_openlit,
    "strands": run_strands,
    "google_adk": run_google_adk,
    "semantic_kernel": run_semantic_kernel,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in AGENTS:
        sys.exit(f"usage: agents.py {{{','.join(AGENTS)}}}")
    AGENTS[sys.argv[1]]()
