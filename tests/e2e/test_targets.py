"""Rules that score single LLM calls, tool calls and retrievals, and whole sessions, through the real service.

SDK spans go in over gRPC; scores, decisions and evaluation events come out of chDB.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from spanscore.testing.traces import SEARCH, rag_traces
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_dashboard import CHROMIUM, BrowserWatch, api_url, needs_chromium


def _ids(span: ReadableSpan) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


async def _query(service: Service, sql: str) -> list[Any]:
    return list(await asyncio.to_thread(service.store.internal_query, sql))


async def _wait_for(service: Service, sql: str, expected: int, wait_s: float = 30.0) -> int:
    deadline = time.monotonic() + wait_s
    while True:
        count = int((await _query(service, sql))[0][0])
        if count >= expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


SPAN_RULES = [
    {"name": "calls", "target": "llm", "where": {"service.name": "support-bot"}, "scorers": ["completeness"]},
    {"name": "tools", "target": "tool", "scorers": [{"name": "tool_call_accuracy", "expected_tool": "search"}]},
    {"name": "docs", "target": "retrieval", "scorers": ["tests.e2e.target_scorers:documents_found"]},
    {"name": "runs", "scorers": ["completeness"]},
]


def _fast(config: ServiceConfig, rules: list[dict[str, Any]]) -> None:
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate(rule) for rule in rules]


async def test_each_span_target_is_scored_on_its_own_span_with_its_own_decision(service_config: ServiceConfig) -> None:
    _fast(service_config, SPAN_RULES)
    spans = rag_traces()
    by_name: dict[str, list[str]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(_ids(span)[1])
    for attempt in range(2):  # the second service instance replays the same trace into the same database
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
            if attempt == 0:
                assert await _wait_for(service, "SELECT count() FROM scores WHERE Status = 'ok'", 5) >= 5
            await asyncio.sleep(1.0)  # the replay is ready by now: it must change nothing
        finally:
            await service.shutdown()
    service = Service(service_config)
    await service.start()
    try:
        scores = await _query(
            service, "SELECT Target, Rule, SpanId, RunId, Score, Attributes['run.id'] FROM scores FINAL ORDER BY Rule"
        )
        (root,) = by_name["invoke_agent helper"]
        assert sorted((s[0], s[1], s[2]) for s in scores) == sorted(
            [("llm", "calls", span_id) for span_id in by_name["chat gpt-4o"]]
            + [("tool", "tools", by_name["execute_tool search"][0])]
            + [("retrieval", "docs", by_name["retrieval docs"][0])]
            + [("run", "runs", root)]
        )
        # After the restart, recovery found every subject of the run handled, so the replay was not scored
        # again at all (not merely deduplicated by FINAL).
        assert await _query(service, "SELECT count() FROM scores") == [(5,)]
        assert all(s[3] == s[2] for s in scores)  # a span-level score's subject is its span
        assert {s[5] for s in scores if s[0] != "run"} == {root}  # and it names the run it belongs to
        assert {s[1]: s[4] for s in scores if s[1] in ("tools", "docs")} == {"tools": 1.0, "docs": 0.5}
        decisions = await _query(
            service, "SELECT Target, Rule, Decision, count() FROM score_decisions FINAL GROUP BY ALL ORDER BY Rule"
        )
        assert decisions == [
            ("llm", "calls", "sampled", 2),
            ("retrieval", "docs", "sampled", 1),
            ("run", "runs", "sampled", 1),
            ("tool", "tools", "sampled", 1),
        ]
        events = await _query(
            service,
            "SELECT SpanId, Attributes['spanscore.rule'] FROM span_events WHERE EventName = 'gen_ai.evaluation.result'",
        )
        assert sorted(events) == sorted((s[2], s[1]) for s in scores)
        stored = await _query(service, "SELECT Target, RunId FROM scored_runs FINAL WHERE Target != 'run'")
        assert len(stored) == 4  # what each span-level scorer received, kept like a run's
        calls = await _query(service, "SELECT Run FROM scored_runs FINAL WHERE Target = 'llm' ORDER BY RunTimestamp")
        # The first call was offered the search tool, and its view says so; the second was offered none.
        assert [json.loads(row[0]).get("tools") for row in calls] == [[{"name": "search", **SEARCH}], None]
    finally:
        await service.shutdown()


SESSION_RULE = {
    "name": "conversation",
    "target": "session",
    "scorers": ["turn_count", "tool_calls_per_turn", "repeated_tool_calls"],
}


def _session_config(config: ServiceConfig, quiet_s: float) -> None:
    _fast(config, [SESSION_RULE])
    config.collector.sessions = config.collector.sessions.model_copy(update={"quiet_period_s": quiet_s})


async def test_a_session_is_scored_after_its_quiet_period_and_again_when_it_continues(
    service_config: ServiceConfig,
) -> None:
    _session_config(service_config, 1.0)
    turns = rag_traces(3, session="conv-7")
    other = rag_traces(1, session="conv-8", first=10)
    roots = [_ids(s) for s in turns if s.name == "invoke_agent helper"]
    service = Service(service_config)
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), turns + other) == "SUCCESS"
        sql = "SELECT count() FROM scores FINAL WHERE Target = 'session'"
        assert await _wait_for(service, sql, 6) == 6
        rows = await _query(
            service,
            "SELECT RunId, Scorer, Score, TraceId, SpanId, SessionId, ReadyReason FROM scores FINAL"
            " WHERE RunId = 'conv-7' ORDER BY Scorer",
        )
        assert [(r[1], r[2]) for r in rows] == [
            ("repeated_tool_calls", 0.0),
            ("tool_calls_per_turn", 1.0),
            ("turn_count", 3.0),
        ]
        last = roots[-1]  # runs are made one after the other, so the last root to end is the latest run
        assert {(r[3], r[4], r[5], r[6]) for r in rows} == {(last[0], last[1], "conv-7", "session_quiet")}

        fourth = rag_traces(1, session="conv-7", first=3)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), fourth) == "SUCCESS"
        sql = "SELECT count() FROM scores FINAL WHERE RunId = 'conv-7' AND ReadyReason = 'session_continued'"
        assert await _wait_for(service, sql, 3) == 3
        rows = await _query(
            service, "SELECT Scorer, Score, SpanId FROM scores FINAL WHERE RunId = 'conv-7' ORDER BY Scorer"
        )
        new_root = next(_ids(s)[1] for s in fourth if s.name == "invoke_agent helper")
        assert [(r[0], r[1]) for r in rows][2] == ("turn_count", 4.0)
        assert {r[2] for r in rows} == {new_root}  # the rescore replaced the first scores, on the newest run
        decisions = await _query(service, "SELECT count() FROM score_decisions FINAL WHERE Target = 'session'")
        assert decisions == [(2,)]  # one per session, the rescored one replaced
    finally:
        await service.shutdown()


async def test_a_session_open_at_a_restart_is_scored_once_with_every_turn(service_config: ServiceConfig) -> None:
    _session_config(service_config, 2.0)
    turns = rag_traces(3, session="conv-9")
    service = Service(service_config)
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), turns) == "SUCCESS"
        sql = "SELECT count() FROM scored_runs FINAL WHERE SessionId = 'conv-9'"
        assert await _wait_for(service, sql, 3) == 3  # the turns are stored; the session is still open
    finally:
        await service.shutdown()
    service = Service(service_config)
    await service.start()
    try:
        assert int(service.live.metrics()["sessions_open"]) == 1
        sql = "SELECT count() FROM scores FINAL WHERE RunId = 'conv-9'"
        assert await _wait_for(service, sql, 3) == 3
        rows = await _query(service, "SELECT Scorer, Score FROM scores WHERE RunId = 'conv-9' ORDER BY Scorer")
        assert rows == [("repeated_tool_calls", 0.0), ("tool_calls_per_turn", 1.0), ("turn_count", 3.0)]
    finally:
        await service.shutdown()


async def test_a_session_scored_before_a_restart_is_not_scored_again_after_it(service_config: ServiceConfig) -> None:
    """Recovery re-reads the traces of the last minutes and skips the runs storage says were handled. A turn
    of a session only rule has no run decision: it was handled once it was stored as a turn. Before, recovery
    took it for unhandled, the session came back as new and was scored again (a second judge bill), and a
    joining fleet replica did the same with the sessions its peers had scored."""
    _session_config(service_config, 1.0)
    service = Service(service_config)
    await service.start()
    try:
        spans = rag_traces(2, session="conv-3") + rag_traces(1, session="conv-4", first=5)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        sql = "SELECT count() FROM score_decisions WHERE Target = 'session'"
        assert await _wait_for(service, sql, 2) == 2
    finally:
        await service.shutdown()
    service = Service(service_config)
    await service.start()
    try:
        assert service.live is not None
        await asyncio.sleep(4.0)  # past the runs' and the sessions' quiet periods: a second scoring lands by now
        assert service.live.sessions.stats.sessions_ready == 0
        assert await _query(service, sql) == [(2,)]
        scores = await _query(service, "SELECT RunId, count() FROM scores WHERE Target = 'session' GROUP BY RunId")
        assert sorted(scores) == [("conv-3", 3), ("conv-4", 3)]  # three session scorers, once each
    finally:
        await service.shutdown()


async def _continued_once_forgotten(
    service_config: ServiceConfig, session: str, forgotten_by: str, rescore: str = "continued"
) -> Service:
    """A session of two turns scored (turn_count 2), then forgotten by a restart or past ``keep_scored_s``, then
    continued by a third turn: the service running now, for the caller to check and shut down."""
    _session_config(service_config, 1.0)
    keep_s = 0.5 if forgotten_by == "keep_scored_s" else 3600.0
    service_config.collector.sessions = service_config.collector.sessions.model_copy(
        update={"keep_scored_s": keep_s, "rescore": rescore}
    )
    sql = f"SELECT Score FROM scores FINAL WHERE RunId = '{session}' AND Scorer = 'turn_count'"
    service = Service(service_config)
    await service.start()
    try:
        spans = rag_traces(2, session=session)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        assert await _wait_for(service, f"SELECT count() FROM scores WHERE RunId = '{session}'", 3) == 3
        assert await _query(service, sql) == [(2.0,)]
        if forgotten_by == "restart":
            await service.shutdown()
            service = Service(service_config)
            await service.start()
        else:
            await asyncio.sleep(2 * keep_s + 0.5)  # past keep_scored_s: the scored session left memory
        continued = rag_traces(1, session=session, first=2)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), continued) == "SUCCESS"
    except BaseException:
        await service.shutdown()
        raise
    return service


@pytest.mark.parametrize("forgotten_by", ["restart", "keep_scored_s"])
async def test_with_rescore_never_the_first_session_scores_stand_once_memory_forgot_them(
    service_config: ServiceConfig, forgotten_by: str
) -> None:
    """``rescore: never`` ignores a continuation, but it knew of one only while the scored session was kept in
    memory (``keep_scored_s``): after a restart, or later than that, the continuation opened a new session of
    one turn, scored with the same score ids, which replaced the first scores. The store says it was scored."""
    sql = "SELECT Score FROM scores FINAL WHERE RunId = 'conv-5' AND Scorer = 'turn_count'"
    service = await _continued_once_forgotten(service_config, "conv-5", forgotten_by, rescore="never")
    try:
        assert service.live is not None
        await asyncio.sleep(4.0)  # past the runs' and the session's quiet periods: a second scoring lands by now
        assert await _query(service, sql) == [(2.0,)]  # the first scores stand
        decisions = await _query(service, "SELECT count() FROM score_decisions WHERE RunId = 'conv-5'")
        assert decisions == [(1,)]
        assert service.live.sessions.stats.continued_ignored >= 1
    finally:
        await service.shutdown()


@pytest.mark.parametrize("forgotten_by", ["restart", "keep_scored_s"])
async def test_a_session_continued_once_memory_forgot_it_is_scored_again_whole(
    service_config: ServiceConfig, forgotten_by: str
) -> None:
    """Under ``rescore: continued`` a continuation is scored with every turn, read back from the store when the
    earlier turns left memory (a restart, ``keep_scored_s``). A single process read them only for sessions it
    restored at start: the continuation was scored as a session of one turn, or decided and not scored.

    It is a continuation, said so as one that memory kept is: reason ``session_continued`` and counted in
    ``sessions_rescored``, not a new session ready after its quiet period."""
    sql = "SELECT Score FROM scores FINAL WHERE RunId = 'conv-6' AND Scorer = 'turn_count'"
    service = await _continued_once_forgotten(service_config, "conv-6", forgotten_by)
    try:
        assert service.live is not None
        assert await _wait_for(service, "SELECT count() FROM scores WHERE RunId = 'conv-6'", 6) == 6
        assert await _query(service, sql) == [(3.0,)]  # the whole session, not the continuation alone
        reasons = await _query(
            service, "SELECT ReadyReason FROM score_decisions FINAL WHERE RunId = 'conv-6' ORDER BY ReadyReason"
        )
        assert reasons == [("session_continued",)]
        stats = service.live.sessions.stats
        assert (stats.sessions_rescored, stats.sessions_ready) == (1, 0 if forgotten_by == "restart" else 1)
    finally:
        await service.shutdown()


async def test_preview_and_backfill_count_and_score_the_rules_target(service_config: ServiceConfig) -> None:
    from spanscore.offline.backfill import backfill, preview

    _fast(service_config, [{"name": "runs", "sample": 0.0, "scorers": ["completeness"]}])
    service = Service(service_config)
    await service.start()
    try:
        spans = rag_traces(2, session="conv-1") + rag_traces(1, session="conv-2", first=5)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        assert await _wait_for(service, "SELECT count() FROM score_decisions", 3) == 3
        runs = service_config.collector.runs
        counts = {}
        for target, scorer in (
            ("run", "completeness"),
            ("llm", "completeness"),
            ("tool", "tool_call_accuracy"),
            ("retrieval", "tests.e2e.target_scorers:documents_found"),
            ("session", "turn_count"),
        ):
            options = {"expected_tool": "search"} if scorer == "tool_call_accuracy" else {}
            rule = RuleConfig.model_validate(
                {"name": f"{target}-rule", "target": target, "scorers": [{"name": scorer, **options}]}
            )
            result = await asyncio.to_thread(preview, service.store, rule, 3600, runs)
            counts[target] = (result.candidates, result.sampled)
        assert counts == {"run": (3, 3), "llm": (6, 6), "tool": (3, 3), "retrieval": (3, 3), "session": (2, 2)}

        rule = RuleConfig.model_validate({"name": "late-sessions", "target": "session", "scorers": ["turn_count"]})
        for _ in range(2):  # a second backfill skips what the first scored
            await backfill(service.store, rule, 3600, runs)
        rows = await _query(
            service, "SELECT RunId, Score, Target FROM scores FINAL WHERE Rule = 'late-sessions' ORDER BY RunId"
        )
        assert rows == [("conv-1", 2.0, "session"), ("conv-2", 1.0, "session")]
        raw = await _query(service, "SELECT count() FROM scores WHERE Rule = 'late-sessions'")
        assert raw == [(2,)]
    finally:
        await service.shutdown()


@needs_chromium
async def test_the_session_page_shows_turns_with_their_scores(service_config: ServiceConfig, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    _session_config(service_config, 0.5)
    service_config.rules.append(
        RuleConfig.model_validate({"name": "calls", "target": "llm", "scorers": ["completeness"]})
    )
    service = Service(service_config)
    await service.start()
    try:
        spans = rag_traces(2, session="conv <&> 1")  # an id that needs escaping in a URL and in HTML
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        assert await _wait_for(service, "SELECT count() FROM scores FINAL WHERE Target = 'session'", 3) == 3
        assert await _wait_for(service, "SELECT count() FROM scores FINAL WHERE Target = 'llm'", 4) == 4
        base = api_url(service, "")
        async with playwright.async_playwright() as driver:
            browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                page = await browser.new_page()
                watch = BrowserWatch(base)
                watch.attach(page)
                await page.goto(f"{base}/dashboard/session?id={quote('conv <&> 1')}")
                await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
                await page.screenshot(path=str(tmp_path / "session.png"), full_page=True)
                assert await page.locator("#session-id").inner_text() == "conv <&> 1"
                rows = await page.locator("#session-scores-table tbody tr").all_inner_texts()
                assert sorted(row.split("\t")[0] for row in rows) == [
                    "repeated_tool_calls", "tool_calls_per_turn", "turn_count"
                ]  # fmt: skip
                turns = page.locator("#turns > .conversation")
                assert await turns.count() == 2
                first = await turns.nth(0).inner_text()
                assert "When does the shop open on day 0?" in first and "The shop opens at 9." in first
                assert "search(" in first
                assert await turns.nth(0).locator("ul.scores li").count() == 2  # its two LLM calls' scores
                # the run page links back to the conversation
                await turns.nth(1).locator("h3 a").click()
                await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
                assert await page.locator("a.session-link").inner_text() == "session conv <&> 1"
                assert watch.problems == []
            finally:
                await browser.close()
    finally:
        await service.shutdown()
