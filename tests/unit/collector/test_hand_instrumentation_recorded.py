"""The README's JavaScript hand instrumentation, as recorded (``hand_js.traces.json``), is one full run (#29).

Recorded with ``tests/fixtures/record_hand_js.py`` from the README snippet exactly as written, so this
holds where node is not set up; ``tests/e2e/test_readme_hand_instrumentation.py`` runs both snippets live.
"""

from __future__ import annotations

from recorded_traces import FIXTURES, load

from spanscore.runs.assembly import runs_from_spans
from spanscore.sampling.filters import parse_filter


def test_the_recorded_javascript_snippet_is_one_run_with_every_field() -> None:
    spans, logs = load("hand_js", FIXTURES)
    (run,) = runs_from_spans(spans, logs)
    assert (run.input_text, run.output_text) == ("What is the weather in Paris?", "It is sunny, 22 C in Paris.")
    assert [(c.name, c.arguments, c.result) for c in run.tool_calls or ()] == [
        ("get_weather", {"city": "Paris"}, "sunny, 22 C")
    ]
    assert (run.agent_name, run.session_id, run.service_name) == ("weather_agent", "session-42", "weather-app")
    assert run.model == "gpt-4o-mini"
    assert run.span_id == next(span.span_id for span in spans if span.name == "invoke_agent weather_agent")
    assert parse_filter({"agent.name": "weather_agent"}).matches(run)
