"""spanscore_client against a real ``spanscore serve`` (loopback, API token): every call, and its errors.

One service for the module: an agent run is sent with the OpenTelemetry SDK, then each test reads, posts or
changes something through the client and checks it with a query through the same client.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from spanscore_client import SpanscoreClient, SpanscoreError
from spanscore_client.otel import current_ids, feedback_for_current_span
from spanscore_served import TOKEN, Served, spanscore_serve

pytestmark = pytest.mark.slow
QUESTION = "What is the weather in Paris?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with spanscore_serve(tmp_path_factory.mktemp("client")) as service:
        yield service


@pytest.fixture(scope="module")
def client(served: Served) -> SpanscoreClient:
    return SpanscoreClient(served.api_url, token=TOKEN, timeout=30)


@pytest.fixture(scope="module")
def provider(served: Served) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "client-test"}))
    exporter = OTLPSpanExporter(endpoint=f"{served.otlp_http_url}/v1/traces", timeout=10)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


def _message(role: str, text: str) -> dict[str, object]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _agent_run(provider: TracerProvider, answer: str) -> str:
    """One agent run, exported; its trace id."""
    tracer = provider.get_tracer("client-test")
    with tracer.start_as_current_span("invoke_agent weather_agent") as span:
        span.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather_agent",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
                ),
                "gen_ai.output.messages": json.dumps([_message("assistant", answer)]),
            }
        )
        trace_id, _ = current_ids()
    return trace_id


def _until(what: str, probe: object, seconds: float = 60) -> None:
    assert callable(probe)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.3)
    raise AssertionError(f"not in time: {what}")


@pytest.fixture(scope="module")
def scored_trace(client: SpanscoreClient, provider: TracerProvider) -> str:
    trace_id = _agent_run(provider, "It is sunny, 22 C in Paris.")
    sql = f"SELECT count() AS n FROM scores FINAL WHERE TraceId = '{trace_id}' AND Rule = 'default'"
    _until("the run is scored", lambda: int(client.query(sql).rows[0]["n"]) > 0)
    return trace_id


def test_feedback_is_stored_on_the_run_and_a_later_trace_is_reported_unresolved(
    client: SpanscoreClient, scored_trace: str
) -> None:
    result = client.post_feedback(scored_trace, "helpfulness", label="up", comment="solved it", author="ana")
    assert result["stored"] == 1 and result["unresolved"] == []
    rows = client.query(
        f"SELECT Source, Author, Label, ServiceName FROM scores FINAL WHERE TraceId = '{scored_trace}'"
        " AND Scorer = 'helpfulness'"
    ).rows
    assert rows == [{"Source": "human", "Author": "ana", "Label": "pass", "ServiceName": "client-test"}]

    never_sent = "0af7651916cd43dd8448eb211c80319c"
    waiting = client.post_feedback(never_sent, "helpfulness", value=0.2, source="app")
    assert waiting["unresolved"] == waiting["score_ids"] and len(waiting["score_ids"]) == 1


def test_a_refused_post_carries_the_services_problems_and_stores_nothing(client: SpanscoreClient) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with pytest.raises(SpanscoreError) as refused:
        client.post_scores([{"trace_id": trace_id, "name": "ok", "label": "up"}, {"trace_id": trace_id, "name": "x"}])
    assert refused.value.status == 400 and not refused.value.retryable
    assert refused.value.message == "scores refused, nothing stored"
    assert any(problem.startswith("[1]") for problem in refused.value.problems), refused.value.problems
    assert client.query(f"SELECT count() AS n FROM scores WHERE TraceId = '{trace_id}'").rows == [{"n": 0}]


def test_a_wrong_token_and_a_bad_query_raise_with_the_services_message(served: Served, client: SpanscoreClient) -> None:
    with pytest.raises(SpanscoreError) as unauthenticated:
        SpanscoreClient(served.api_url, token="wrong").status()
    assert unauthenticated.value.status == 401 and "token" in unauthenticated.value.message
    with pytest.raises(SpanscoreError) as write:
        client.query("INSERT INTO scores (Scorer) VALUES ('x')")
    assert write.value.status == 400 and write.value.message
    with pytest.raises(SpanscoreError) as nobody:
        SpanscoreClient("http://127.0.0.1:9", timeout=5).health()
    assert nobody.value.status == 0 and nobody.value.retryable


def test_runs_and_scores_read_back_what_the_run_was(client: SpanscoreClient, scored_trace: str) -> None:
    (run,) = client.scored_runs(scored_trace)
    assert (run["agent_name"], run["model"], run["answer"]) == (
        "weather_agent",
        "gpt-4o-mini",
        "It is sunny, 22 C in Paris.",
    )
    page = client.run(scored_trace)
    assert [span["name"] for span in page["spans"]] == ["invoke_agent weather_agent"]
    assert {score["scorer"] for score in page["scores"]} >= {"answer_health"}
    assert any(row["scorer"] == "answer_health" for row in client.scorers("1h"))
    assert any(run["trace_id"] == scored_trace for run in client.worst_runs("1h", scorer="answer_health"))
    assert client.trend("1h", scorer="answer_health")
    csv_rows = client.query_csv_rows(f"SELECT TraceId FROM scores FINAL WHERE TraceId = '{scored_trace}' LIMIT 1")
    assert csv_rows == [["TraceId"], [scored_trace]]


def test_rules_are_previewed_before_they_are_applied_and_a_bad_set_is_refused(
    client: SpanscoreClient, scored_trace: str
) -> None:
    new_rule = {"name": "weather", "where": {"agent.name": "weather_agent"}, "sample": 1.0, "scorers": ["completeness"]}
    preview = client.preview_rule("weather", "1h", rules=[new_rule])
    assert preview["matched"] >= 1, preview
    assert [rule["name"] for rule in client.rules()["rules"]] == ["default"]
    with pytest.raises(SpanscoreError) as refused:
        client.apply_rules([{**new_rule, "scorers": ["no_such_scorer"]}])
    assert refused.value.status == 400 and any("no_such_scorer" in problem for problem in refused.value.problems)
    applied = client.apply_rules([new_rule])
    assert applied["changed"] is True and [rule["name"] for rule in client.rules()["rules"]] == ["weather"]


def test_the_otel_helper_posts_feedback_for_the_current_spans_trace(
    client: SpanscoreClient, provider: TracerProvider
) -> None:
    tracer = provider.get_tracer("client-test")
    with tracer.start_as_current_span("invoke_agent weather_agent") as span:
        result = feedback_for_current_span(client, "thumbs", label="down", whole_run=False)
        trace_id = f"{span.get_span_context().trace_id:032x}"
        span_id = f"{span.get_span_context().span_id:016x}"
    assert result["stored"] == 1
    sql = "SELECT TraceId, SpanId, Label FROM scores FINAL WHERE Scorer = 'thumbs' AND Source = 'human'"
    _until("the feedback is stored", lambda: client.query(sql).rows != [])
    assert client.query(sql).rows == [{"TraceId": trace_id, "SpanId": span_id, "Label": "fail"}]
    with pytest.raises(SpanscoreError, match="no current span"):
        feedback_for_current_span(client, "thumbs", label="up")


def test_the_client_installs_alone_in_a_fresh_venv_and_posts_feedback(served: Served, tmp_path: Path) -> None:
    """The wheel needs nothing beside it: a venv with only it (no spanscore, no httpx) posts and reads."""
    package = tmp_path / "spanscore-client"  # a copy: the build writes build/ and egg-info beside its sources
    skipped = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".mypy_cache", "tests")
    shutil.copytree(Path(__file__).resolve().parents[1], package, ignore=skipped)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w", str(tmp_path / "dist")]
        + [str(package)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("spanscore_client-*.whl")
    with zipfile.ZipFile(wheel) as archive:  # typed for its users' mypy: the marker ships
        assert "spanscore_client/py.typed" in archive.namelist()
    venv.create(tmp_path / "venv", with_pip=False)  # this pip installs into it: ensurepip took a minute
    python = str(tmp_path / "venv" / "bin" / "python")
    install = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-index", str(wheel)]
    installed = subprocess.run(install, capture_output=True, text=True, timeout=180)
    assert installed.returncode == 0, installed.stderr
    script = (
        "import importlib.util, sys\n"
        "assert importlib.util.find_spec('spanscore') is None, 'spanscore is importable'\n"
        "from spanscore_client import SpanscoreClient\n"
        f"client = SpanscoreClient({served.api_url!r}, token={TOKEN!r})\n"
        "result = client.post_feedback('5b8aa5a2d2c872e8321cf37308d69df2', 'alone', value=1.0)\n"
        "print(result['stored'], client.health()['status'])\n"
    )
    ran = subprocess.run([python, "-I", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (ran.returncode, ran.stdout.split()) == (0, ["1", "ok"]), ran.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "list", "--format", "json"], capture_output=True, text=True
    )
    names = {entry["name"] for entry in json.loads(listed.stdout)}
    assert "spanscore-client" in names and not names & {"spanscore", "httpx", "opentelemetry-api"}, names
