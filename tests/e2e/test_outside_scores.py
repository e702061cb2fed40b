"""Outside scores in the scores table: POST /api/v1/scores, OTLP evaluation events and log records, agreement."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from spanscore.cli.report import agreement_report
from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces


def _post(port: int, body: Any, kind: str = "application/json") -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/scores", data=data, method="POST", headers={"Content-Type": kind}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def _rows(service: Service, sql: str, expected: int, wait_s: float = 20.0) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + wait_s
    while True:
        rows = await asyncio.to_thread(service.store.internal_query, sql)
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.1)


async def test_posted_scores_are_stored_once_and_bad_ones_change_nothing(service_config: ServiceConfig) -> None:
    service = Service(service_config)
    await service.start()
    try:
        assert service.api is not None and service.grpc is not None
        spans = agent_traces(2)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.context.trace_id)
        first, second = (f"{s.context.trace_id:032x}" for s in roots)
        first_root = f"{roots[0].context.span_id:016x}"

        thumbs = {"trace_id": first, "name": "helpfulness", "label": "up", "comment": "spot on", "author": "ana"}
        status, stored = await asyncio.to_thread(_post, service.api.port, thumbs)
        assert status == 200 and stored["stored"] == 1, stored
        status, again = await asyncio.to_thread(_post, service.api.port, thumbs)  # a client retry
        assert status == 200 and again["score_ids"] == stored["score_ids"]
        app_score = {"trace_id": second, "name": "helpfulness", "value": 0.2, "source": "app"}
        assert (await asyncio.to_thread(_post, service.api.port, [app_score]))[0] == 200

        # one bad item in a list refuses the whole list, naming the field
        bad = [
            {"trace_id": second, "name": "tone", "value": 1},
            {"trace_id": "xyz", "name": "tone", "value": 1},
            {"trace_id": second, "name": "tone"},
        ]
        status, refused = await asyncio.to_thread(_post, service.api.port, bad)
        assert status == 400 and "nothing stored" in refused["error"]
        assert any(p.startswith("[1].trace_id") for p in refused["problems"]), refused
        assert any(p.startswith("[2]") and "value, a label" in p for p in refused["problems"]), refused
        status, unknown = await asyncio.to_thread(
            _post, service.api.port, {"trace_id": "0" * 32, "name": "x", "value": 1}
        )
        assert status == 400 and "all zeros" in unknown["problems"][0], unknown
        status, reserved = await asyncio.to_thread(_post, service.api.port, {**app_score, "source": "spanscore"})
        assert status == 400 and "reserved" in reserved["problems"][0]
        assert (await asyncio.to_thread(_post, service.api.port, b"source=human", "text/plain"))[0] == 415

        rows = await _rows(
            service,
            "SELECT TraceId, SpanId, Scorer, Score, Label, Reason, Source, Author, Rule, SampleRate"
            " FROM scores FINAL ORDER BY Source",
            2,
        )
        assert rows == [
            (second, f"{roots[1].context.span_id:016x}", "helpfulness", 0.2, "fail", "", "app", "", "source:app", 1.0),
            (first, first_root, "helpfulness", None, "pass", "spot on", "human", "ana", "source:human", 1.0),
        ]
        count = await asyncio.to_thread(
            service.store.internal_query, "SELECT count() FROM scores WHERE Scorer = 'tone'"
        )
        assert count[0][0] == 0
    finally:
        await service.shutdown()


async def test_feedback_posted_before_its_trace_is_kept_and_attached_when_the_trace_arrives(
    service_config: ServiceConfig,
) -> None:
    """An app posts a thumbs-up the moment it has a trace id, before the exporter's batch: nothing is lost."""
    service = Service(service_config)
    await service.start()
    try:
        assert service.api is not None and service.grpc is not None
        spans = agent_traces(1)
        root = next(s for s in spans if s.parent is None)
        trace_id, root_id = f"{root.context.trace_id:032x}", f"{root.context.span_id:016x}"
        early = {"trace_id": trace_id, "name": "helpfulness", "label": "up", "author": "app-user"}
        status, answer = await asyncio.to_thread(_post, service.api.port, early)
        assert status == 200 and answer["stored"] == 1 and answer["unresolved"] == answer["score_ids"], answer
        status, again = await asyncio.to_thread(_post, service.api.port, early)  # the app retries
        assert status == 200 and again["score_ids"] == answer["score_ids"]
        never = {"trace_id": "ab" * 16, "name": "helpfulness", "label": "down"}
        assert (await asyncio.to_thread(_post, service.api.port, never))[0] == 200

        sql = (
            "SELECT TraceId, SpanId, ServiceName, Label, Attributes['pending_span'] != '' AS pending "
            "FROM scores FINAL WHERE Scorer = 'helpfulness' ORDER BY TraceId"
        )
        rows = await _rows(service, sql, 2)
        assert {(r[0], r[4]) for r in rows} == {("ab" * 16, 1), (trace_id, 1)}  # kept, visibly unresolved

        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        await _rows(service, f"SELECT 1 FROM otel_traces WHERE TraceId = '{trace_id}'", 1)
        assert await service.feedback_resolver.resolve_once() == 1
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rows = await asyncio.to_thread(service.store.internal_query, sql)
            if any(r[0] == trace_id and r[4] == 0 for r in rows):
                break
            await asyncio.sleep(0.1)
        assert set(rows) == {
            ("ab" * 16, "", "", "fail", 1),  # its trace never came: still stored, still marked
            (trace_id, root_id, "support-bot", "pass", 0),  # attached to the run's root, in place
        }, rows
        copies = await asyncio.to_thread(
            service.store.internal_query, f"SELECT count() FROM scores FINAL WHERE TraceId = '{trace_id}'"
        )
        assert copies[0][0] == 1
        assert service.metrics()["outside_scores_resolved_late"] == 1
    finally:
        await service.shutdown()


async def test_otlp_evaluation_results_are_stored_as_source_otlp(service_config: ServiceConfig) -> None:
    service = Service(service_config)
    await service.start()
    try:
        assert service.grpc is not None
        provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
        kept = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(kept))
        tracer = provider.get_tracer("app")
        with tracer.start_as_current_span("invoke_agent support") as root:
            root.add_event(
                "gen_ai.evaluation.result",
                {"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.9,
                 "gen_ai.evaluation.score.label": "relevant", "gen_ai.evaluation.explanation": "on topic"},
            )  # fmt: skip
            root.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "ours", "spanscore.internal": True})
        memory = list(kept.get_finished_spans())
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), memory) == "SUCCESS"
        context = memory[0].get_span_context()
        trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"

        def send_log() -> None:  # the SDK exports on emit: off the event loop the service runs on
            logs = LoggerProvider(resource=Resource.create({"service.name": "offline-evaluator"}))
            logs.add_log_record_processor(
                SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True))
            )
            parent = trace.set_span_in_context(
                NonRecordingSpan(SpanContext(context.trace_id, context.span_id, True, TraceFlags(1)))
            )
            logs.get_logger("evaluator").emit(
                context=parent,
                event_name="gen_ai.evaluation.result",
                attributes={"gen_ai.evaluation.name": "groundedness", "gen_ai.evaluation.score.value": 0.4},
            )
            logs.shutdown()

        await asyncio.to_thread(send_log)

        rows = await _rows(
            service, "SELECT SpanId, Scorer, Score, Label, Reason, Source, Author FROM scores FINAL ORDER BY Scorer", 2
        )
        assert rows == [
            (span_id, "groundedness", 0.4, "fail", "", "otlp", "offline-evaluator"),
            (span_id, "relevance", 0.9, "relevant", "on topic", "otlp", "support-bot"),
        ]
        assert {r[0] for r in await asyncio.to_thread(service.store.internal_query, "SELECT TraceId FROM scores")} == {
            trace_id
        }
    finally:
        await service.shutdown()


async def test_agreement_report_pairs_judge_and_human_scores(service_config: ServiceConfig) -> None:
    """Four runs scored by 'completeness' (stored as spanscore's) and labelled by people; figures by hand below."""

    service = Service(service_config)
    await service.start()
    try:
        traces = [f"{i:032x}" for i in range(1, 5)]
        judge = [(0.9, "pass"), (0.8, "pass"), (0.3, "fail"), (0.7, "pass")]
        human = [(1.0, "pass"), (0.0, "fail"), (0.0, "fail"), (1.0, "pass")]
        now = time.time_ns()
        rows = []
        for index, trace_id in enumerate(traces):
            for source, (score, label) in (("spanscore", judge[index]), ("human", human[index])):
                rows.append(_row(trace_id, source, score, label, now))
        await asyncio.to_thread(service.store.insert_scores_sync, rows)

        def run_query(sql: str, fmt: str) -> bytes:
            return service.store.query_sync(sql, fmt)

        code, text = await asyncio.to_thread(agreement_report, run_query, "completeness", None, "human", "1h", "json")
        figures = json.loads(text)
        # judge pass/pass/fail/pass vs human pass/fail/fail/pass: 3 of 4 agree, p_o = 0.75
        # P(judge pass) = 3/4, P(human pass) = 2/4: p_e = 0.75*0.5 + 0.25*0.5 = 0.5; kappa = (0.75-0.5)/(1-0.5) = 0.5
        # |0.9-1| + |0.8-0| + |0.3-0| + |0.7-1| = 0.1 + 0.8 + 0.3 + 0.3 = 1.5; mean 0.375
        assert code == 0 and figures["pairs"] == 4
        assert abs(figures["agreement"] - 0.75) < 1e-9 and abs(figures["kappa"] - 0.5) < 1e-9
        assert abs(figures["mean_absolute_difference"] - 0.375) < 1e-9
        code, text = await asyncio.to_thread(agreement_report, run_query, "completeness", None, "app", "1h", "table")
        assert code == 1 and "no pairs" in text and "'app'" in text
    finally:
        await service.shutdown()


def _row(trace_id: str, source: str, score: float, label: str, now: int) -> Any:
    from spanscore.storage.scores import ScoreRow, external_score_id

    return ScoreRow(
        score_id=external_score_id(source, "", "completeness", trace_id, "1" * 16), run_timestamp_ns=now,
        trace_id=trace_id, span_id="1" * 16, run_id="r",
        service_name="svc", agent_name="a", model="", session_id="", user_id="",
        rule="quality" if source == "spanscore" else f"source:{source}", scorer="completeness", scorer_version="1",
        score=score, label=label, reason="", status="ok", error="", sample_rate=1.0, higher_is_better=True,
        judge_model="", input_tokens=0, output_tokens=0, cost_usd=0.0, duration_ms=0.0, ready_reason="",
        run_duration_ms=0.0, run_error="", source=source,
    )  # fmt: skip


async def test_feedback_that_never_resolves_does_not_starve_newer_feedback(service_config: ServiceConfig) -> None:
    """Issue #37 item 8: the resolver read only the oldest page of pending scores, so a page of orphans (an
    exporter that drops traces) kept every later score from resolving for the seven days they were kept."""
    from spanscore.scoring.feedback_resolver import FeedbackResolver

    service = Service(service_config)
    await service.start()
    try:
        assert service.api is not None and service.grpc is not None
        port = service.api.port
        early_spans, late_spans = agent_traces(1), agent_traces(1)
        early_trace, late_trace = (
            f"{next(s for s in spans if s.parent is None).context.trace_id:032x}" for spans in (early_spans, late_spans)
        )
        assert (await asyncio.to_thread(_post, port, {"trace_id": early_trace, "name": "h", "label": "up"}))[0] == 200
        for index in range(12):  # never resolve: their traces never come
            orphan = {"trace_id": f"{index + 1:032x}", "name": "h", "label": "down"}
            assert (await asyncio.to_thread(_post, port, orphan))[0] == 200
        assert (await asyncio.to_thread(_post, port, {"trace_id": late_trace, "name": "h", "label": "up"}))[0] == 200
        await _rows(service, "SELECT 1 FROM scores FINAL WHERE Scorer = 'h'", 14)
        for spans, trace_id in ((early_spans, early_trace), (late_spans, late_trace)):
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
            await _rows(service, f"SELECT 1 FROM otel_traces WHERE TraceId = '{trace_id}'", 1)

        resolver = FeedbackResolver(service.store, service.feedback_writer, page=5)
        assert await resolver.resolve_once() >= 1  # the newest page holds the late one, behind 12 orphans
        pending = "SELECT TraceId FROM scores FINAL WHERE Scorer = 'h' AND Attributes['pending_span'] = ''"
        assert late_trace in {row[0] for row in await _rows(service, pending, 1)}
        for _ in range(3):  # the walk reaches the oldest one too, a page per pass
            await resolver.resolve_once()
        resolved = {row[0] for row in await _rows(service, pending, 2)}
        assert resolved == {early_trace, late_trace}, resolved
    finally:
        await service.shutdown()


async def test_feedback_waiting_for_its_trace_is_shown_apart_and_marked_when_it_never_comes(
    service_config: ServiceConfig,
) -> None:
    """Issue #40 item 4: an orphan looked like normal feedback: counted as scored on the dashboard, "Status ok" on
    its run page, and `status` said 3 posted scores after 2 posts."""
    from spanscore.scoring.feedback_resolver import FeedbackResolver

    service = Service(service_config)
    await service.start()
    try:
        assert service.api is not None and service.grpc is not None
        port = service.api.port
        spans = agent_traces(1)
        trace_id = f"{next(s for s in spans if s.parent is None).context.trace_id:032x}"
        orphan = "cd" * 16
        for trace in (trace_id, orphan):
            assert (await asyncio.to_thread(_post, port, {"trace_id": trace, "name": "h", "label": "up"}))[0] == 200
        await _rows(service, "SELECT 1 FROM scores FINAL WHERE Scorer = 'h'", 2)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        await _rows(service, f"SELECT 1 FROM otel_traces WHERE TraceId = '{trace_id}'", 1)
        resolver = FeedbackResolver(service.store, service.feedback_writer)
        assert await resolver.resolve_once() == 1
        await _rows(service, "SELECT 1 FROM scores FINAL WHERE Scorer = 'h' AND Attributes['pending_span'] = ''", 1)
        await resolver.resolve_once()
        assert (resolver.pending, resolver.never_resolved) == (1, 0)

        scorers = await asyncio.to_thread(_get, port, "/api/v1/dashboard/scorers?since=24h")
        [row] = [r for r in scorers["scorers"] if r["scorer"] == "h"]
        assert (row["scored"], row["pending"], row["never_resolved"]) == (1, 1, 0)
        run = await asyncio.to_thread(_get, port, f"/api/v1/dashboard/runs/{orphan}")
        assert [s["waiting_for_trace"] for s in run["scores"]] == [1]

        later = FeedbackResolver(service.store, service.feedback_writer, max_age_s=0.0)  # its week is over
        await later.resolve_once()
        await _rows(service, "SELECT 1 FROM scores FINAL WHERE Attributes['never_resolved'] != ''", 1)
        await later.resolve_once()
        assert (later.pending, later.never_resolved) == (0, 1)
        scorers = await asyncio.to_thread(_get, port, "/api/v1/dashboard/scorers?since=24h")
        [row] = [r for r in scorers["scorers"] if r["scorer"] == "h"]
        assert (row["scored"], row["pending"], row["never_resolved"]) == (1, 0, 1)
        service.feedback_resolver.resolved, service.feedback_resolver.expired = resolver.resolved, later.expired
        assert service.metrics()["outside_scores_stored"] == 2  # two posts, whatever was rewritten since
    finally:
        await service.shutdown()


def _get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        return json.loads(response.read())
