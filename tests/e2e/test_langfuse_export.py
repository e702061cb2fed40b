"""Spans from the Langfuse SDK and CrewAI's own tracing, sent here the way those SDKs send them, are scored right (#39).

The fixtures are recorded from the real releases (``tests/fixtures/record_frameworks4.py``). A Langfuse user
who changes no code sets ``LANGFUSE_BASE_URL`` and ``LANGFUSE_OTEL_TRACES_EXPORT_PATH=v1/traces``: the SDK's
exporter then posts OTLP protobuf, gzip-compressed, with ``Authorization: Basic base64(public:secret)`` and
its own ``x-langfuse-*`` headers. That request is rebuilt here byte for byte from the fixture and sent to a
live service, with and without ``collector.auth_tokens``; a served ``spanscore serve`` then shows each turn
with the true prompt, answer, tool call, agent, session and user, scored as that text is.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from spanscore.run import Run
from spanscore.scorers import build
from spanscore.server.default_rules import DEFAULT_RULE
from spanscore.server.service import Service
from tests.e2e.test_quick_start import _cli
from tests.e2e.test_readme_hand_instrumentation import _serve, _stop
from tests.fakes.fake_openai_chat import FINAL_ANSWER, MODEL

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "frameworks"
SYSTEM = "You are a weather assistant. Use the tools you have."
QUESTIONS = ("What is the weather in Paris?", "And in Rome?")
TOOL_RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})
TURNS = {"langfuse_observe": 2, "langfuse_langchain": 2, "crewai_native": 1}
SCORERS = (
    *(str(name) for name in DEFAULT_RULE["scorers"]),
    "keyword_coverage",
    "completeness",
    "content_similarity",
    "textual_difference",
    "tone_consistency",
)
RULES = f"rules:\n  - name: content\n    sample: 1.0\n    scorers: [{', '.join(SCORERS)}]\n"


def protobuf_request(name: str, span_id_salt: int = 0) -> bytes:
    """The fixture as the OTLP/HTTP exporter's protobuf body (the fixture's JSON has hex ids; protobuf's, base64).

    A recorder numbers span ids from 1 in every fixture, where an SDK draws them at random: ``span_id_salt``
    gives each fixture its own, so that two fixtures' runs (a run's id is its root span's) stay apart.
    """
    document = json.loads((FRAMEWORKS / f"{name}.traces.json").read_text())

    def base64_ids(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId") and value:
                    number = int(value, 16) ^ (span_id_salt << 32 if key != "traceId" else 0)
                    node[key] = base64.b64encode(number.to_bytes(len(value) // 2, "big")).decode()
                else:
                    base64_ids(value)
        elif isinstance(node, list):
            for item in node:
                base64_ids(item)

    base64_ids(document)
    return json_format.ParseDict(document, trace_service_pb2.ExportTraceServiceRequest()).SerializeToString()


def langfuse_headers(public_key: str, secret_key: str) -> dict[str, str]:
    """The headers the Langfuse SDK's own exporter sends (langfuse 5.0.4, ``LangfuseSpanProcessor``)."""
    basic = base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
    return {
        "Authorization": f"Basic {basic}",
        "x-langfuse-sdk-name": "python",
        "x-langfuse-sdk-version": "5.0.4",
        "x-langfuse-public-key": public_key,
        "x-langfuse-ingestion-version": "4",
        "Content-Type": "application/x-protobuf",
        "Content-Encoding": "gzip",
    }


async def _post(port: int, body: bytes, headers: dict[str, str]) -> int:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://127.0.0.1:{port}/v1/traces", data=body, headers=headers) as response:
            await response.read()
            return response.status


async def _stored_spans(service: Service) -> int:
    rows = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM otel_traces")
    return int(rows[0][0])


@pytest.mark.parametrize("tokens", [[], ["sk-spanscore"]])
async def test_the_langfuse_exporters_request_is_accepted_with_and_without_tokens(service_config, tokens) -> None:
    """Without tokens the Basic header is ignored; with them, a token as the Basic password lets it in."""
    service_config.collector.auth_tokens = tokens
    service = Service(service_config)
    await service.start()
    try:
        body = gzip.compress(protobuf_request("langfuse_observe"))
        status = await _post(service.http.port, body, langfuse_headers("pk-lf-local", "sk-spanscore"))
        assert status == 200
        if tokens:
            for headers in (
                langfuse_headers("pk-lf-local", "sk-wrong"),
                {**langfuse_headers("pk", "x"), "Authorization": "Basic not-base64!"},
                {**langfuse_headers("pk", "x"), "Authorization": "Basic " + base64.b64encode(b"pk-only").decode()},
            ):
                assert await _post(service.http.port, body, headers) == 401
        assert await _stored_spans(service) == 8  # the fixture's spans, stored once
    finally:
        await service.shutdown()


def _expected(name: str) -> list[dict[str, Any]]:
    turns = []
    for index in range(TURNS[name]):
        city = ("Paris", "Rome")[index]
        turns.append(
            {
                "input": [("user", QUESTIONS[index])],
                "answer": FINAL_ANSWER.replace("Paris", city),
                "system": SYSTEM,
                "tool_calls": [("get_weather", {"city": city}, TOOL_RESULT, f"call_weather_{index + 1}")],
                "agent_name": "weather_agent",
                "session_id": "session-42",
                "user_id": "user-7",
                "model": MODEL,
                "provider": "openai",
            }
        )
    return turns


def _served(view: dict[str, Any]) -> dict[str, Any]:
    return {
        "input": [(m["role"], m["content"]) for m in view["input"] or ()],
        "answer": view["answer"],
        "system": view["system"],
        "tool_calls": [(c["name"], c["arguments"], c["result"], c["id"]) for c in view["tool_calls"] or ()],
        **{key: view[key] for key in ("agent_name", "session_id", "user_id", "model", "provider")},
    }


def _scored_runs(cwd: Path, environ: dict[str, str], count: int) -> list[dict[str, Any]]:
    """The served runs, once ``count`` of them have all their default scores."""
    sql = "SELECT TraceId, count() FROM scores FINAL WHERE Rule = 'content' GROUP BY TraceId ORDER BY TraceId"
    deadline = time.monotonic() + 90
    done: list[str] = []
    while time.monotonic() < deadline:
        result = _cli(cwd, environ, "query", "--format", "csv", sql)
        assert result.returncode == 0, result.stderr
        rows = [line.split(",") for line in result.stdout.strip().splitlines()[1:] if line]
        done = [row[0].strip('"') for row in rows if int(row[1]) == len(SCORERS)]
        if len(done) >= count:
            break
        time.sleep(0.5)
    assert len(done) == count, f"not scored in time: {done}"
    views = []
    for trace_id in done:
        shown = _cli(cwd, environ, "runs", "show", trace_id, "--format", "json")
        assert shown.returncode == 0, shown.stderr
        views.extend(json.loads(shown.stdout)["runs"])
    return sorted(views, key=lambda view: view["start_time_ns"])


def _scores(cwd: Path, environ: dict[str, str], run_id: str) -> dict[str, float]:
    sql = f"SELECT Scorer, Score FROM scores FINAL WHERE RunId = '{run_id}' ORDER BY Scorer"
    result = _cli(cwd, environ, "query", "--format", "csv", sql)
    assert result.returncode == 0, result.stderr
    rows = [line.split(",") for line in result.stdout.strip().splitlines()[1:] if line]
    return {row[0].strip('"'): float(row[1]) for row in rows}


@pytest.mark.slow
def test_served_runs_from_langfuse_and_crewai_tracing_are_the_true_turns_and_scored_so(tmp_path: Path) -> None:
    (tmp_path / "spanscore.yaml").write_text(RULES, encoding="utf-8")
    process, environ, _ = _serve(tmp_path, "-c", "spanscore.yaml")
    http = int(environ["SPANSCORE_COLLECTOR__HTTP__PORT"])
    try:
        for salt, name in enumerate(TURNS, start=1):
            body, headers = protobuf_request(name, salt), {"Content-Type": "application/x-protobuf"}
            if name.startswith("langfuse"):
                body, headers = gzip.compress(body), langfuse_headers("pk-lf-local", "sk-lf-local")
            assert asyncio.run(_post(http, body, headers)) == 200, name
        views = _scored_runs(tmp_path, environ, sum(TURNS.values()))
        by_service: dict[str, list[dict[str, Any]]] = {}
        for view in views:
            by_service.setdefault(view["service_name"], []).append(view)
        for name in TURNS:
            served = by_service[f"weather-{name}"]
            assert [_served(view) for view in served] == _expected(name), name
            for view, turn in zip(served, _expected(name), strict=True):
                truth = Run(input=turn["input"][0][1], output=turn["answer"])
                expected = {scorer: build(scorer).run(truth).score for scorer in SCORERS}
                assert _scores(tmp_path, environ, view["run_id"]) == pytest.approx(expected), (name, view["run_id"])
    finally:
        _stop(process)
