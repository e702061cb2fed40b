"""N replicas are one service: real services over one store, coordinated through a real ZooKeeper.

Each replica is a whole ``Service`` with its own receivers, Keeper session and scoring stage; they share one
database, as replicas share a ClickHouse server. Spans go to a replica chosen by trace id, as the
Collector's load-balancing exporter routes them, so the turns of one conversation land on different replicas.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from spanscore.cli.commands import main
from spanscore.config import ServiceConfig
from spanscore.fleet.config import FleetConfig
from spanscore.runs.recovery import StoredSpanSource
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring import fleet_lost_runs
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_targets import SESSION_RULE, rag_traces
from tests.service_setup import make_service_config, new_database_name
from tests.zookeeper import ZooKeeperServer

MakeFleet = Callable[..., Awaitable[list[Service]]]


def _trace_id(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}"


def route(spans: list[ReadableSpan], replicas: int) -> dict[int, list[ReadableSpan]]:
    """Split spans by trace id over the replicas, as the Collector's load-balancing exporter does."""
    routed: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        index = int(hashlib.sha256(_trace_id(span).encode()).hexdigest(), 16) % replicas
        routed.setdefault(index, []).append(span)
    return routed


async def send(replicas: list[Service], spans: list[ReadableSpan]) -> None:
    for index, part in route(spans, len(replicas)).items():
        port = replicas[index].grpc.port if replicas[index].grpc is not None else 0
        assert await asyncio.to_thread(export, grpc_exporter(port), part) == "SUCCESS"


async def query(service: Service, sql: str) -> list[Any]:
    return list(await asyncio.to_thread(service.store.internal_query, sql))


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


@pytest.fixture
async def make_fleet(chdb_dsn: str, zookeeper: ZooKeeperServer, tmp_path: Path) -> AsyncIterator[MakeFleet]:
    database = new_database_name()
    keeper = zookeeper.chroot()
    running: list[Service] = []

    async def make(
        count: int,
        rules: list[dict[str, Any]],
        *,
        quiet_s: float = 1.5,
        runs: dict[str, float] | None = None,
        sessions: dict[str, Any] | None = None,
        scoring: dict[str, Any] | None = None,
        **fleet: Any,
    ) -> list[Service]:
        started = []
        for index in range(count):
            config = make_service_config(chdb_dsn, database, tmp_path / f"replica-{index}")
            configure(config, rules, quiet_s)
            if runs:
                config.collector.runs = config.collector.runs.model_copy(update=runs)
            if sessions:
                config.collector.sessions = config.collector.sessions.model_copy(update=sessions)
            if scoring:
                config.scoring = config.scoring.model_copy(update=scoring)
            config.fleet = FleetConfig(
                keeper=keeper, replica=f"r{index}", session_timeout_s=2.0, **{"turn_poll_s": 0.5, **fleet}
            )
            service = Service(config)
            await service.start()
            running.append(service)
            started.append(service)
        assert started[0].fleet is not None
        await until(lambda: _all_joined(started, count))
        return started

    yield make
    for service in running:
        await service.shutdown()


async def _all_joined(services: list[Service], count: int) -> bool:
    """Every replica sees all of them, and has sized its sessions and caps for them."""
    return all(
        s.fleet is not None
        and len(s.fleet.fleet.members()) == count
        and (s.fleet.member is None or len(s.fleet.member.members) == count)
        for s in services
    )


def configure(config: ServiceConfig, rules: list[dict[str, Any]], quiet_s: float) -> None:
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    config.collector.sessions = config.collector.sessions.model_copy(update={"quiet_period_s": quiet_s})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate(rule) for rule in rules]


def conversations(count: int, turns: int) -> list[ReadableSpan]:
    spans: list[ReadableSpan] = []
    for index in range(count):
        spans += rag_traces(turns, session=f"conv-{index}", first=index * 100)
    return spans


async def session_scores(service: Service) -> dict[str, tuple[float, int]]:
    """Per session: its turn_count score and how many times a session decision was written (raw rows)."""
    counts = await query(service, "SELECT RunId, Score FROM scores FINAL WHERE Scorer = 'turn_count'")
    decided = await query(service, "SELECT RunId, count() FROM score_decisions WHERE Target = 'session' GROUP BY RunId")
    times = dict(decided)
    return {run_id: (float(score), int(times.get(run_id, 0))) for run_id, score in counts}


async def test_each_session_is_scored_once_with_every_turn_whichever_replica_got_them(make_fleet: MakeFleet) -> None:
    replicas = await make_fleet(3, [SESSION_RULE])
    spans = conversations(6, 4)
    spread = {
        session: {index for index, part in route(spans, 3).items() for s in part if s.attributes and
                  s.attributes.get("gen_ai.conversation.id") == session}
        for session in (f"conv-{i}" for i in range(6))
    }  # fmt: skip
    assert any(len(where) > 1 for where in spread.values())  # turns of one conversation on several replicas
    await send(replicas, spans)

    async def all_scored() -> bool:
        return len(await session_scores(replicas[0])) == 6

    await until(all_scored)
    await asyncio.sleep(2.0)  # a second scoring, if any replica were to make one, would land by now
    found = await session_scores(replicas[0])
    assert found == {f"conv-{i}": (4.0, 1) for i in range(6)}
    ready = sum(s.live.sessions.stats.sessions_ready for s in replicas if s.live is not None)
    assert ready == 6


async def test_a_session_read_back_from_other_replicas_keeps_to_its_turn_cap(make_fleet: MakeFleet) -> None:
    """A replica reads the turns other replicas stored before it scores a session; they were merged whole,
    past ``max_turns`` and ``max_session_bytes``, the caps on what a session holds and what its judge is sent.
    The merged turns keep to the caps now, the newest kept, as turns that arrive at the replica do."""
    replicas = await make_fleet(3, [SESSION_RULE], sessions={"max_turns": 2})
    spans = conversations(4, 5)
    await send(replicas, spans)

    async def all_scored() -> bool:
        return len(await session_scores(replicas[0])) == 4

    await until(all_scored)
    found = await session_scores(replicas[0])
    assert found == {f"conv-{i}": (2.0, 1) for i in range(4)}


async def test_a_lost_replicas_open_sessions_are_scored_once_by_their_new_owners(make_fleet: MakeFleet) -> None:
    replicas = await make_fleet(2, [SESSION_RULE], quiet_s=4.0)
    spans = conversations(6, 3)
    await send(replicas, spans)
    await until(lambda: _count(replicas[0], "SELECT count() FROM scored_runs FINAL WHERE SessionId != ''", 18))
    lost, kept = replicas
    assert lost.fleet is not None and lost.live is not None
    owned_by_lost = [f"conv-{i}" for i in range(6) if lost.fleet.fleet.owner(f"session:conv-{i}") == "r0"]
    assert owned_by_lost  # the lost replica held some sessions open
    lost.live.sessions.release(lambda _: False)  # its memory dies with it: nothing is scored from there
    lost.fleet.fleet.expire()  # Keeper ends its session, as for a crashed pod
    await lost.fleet.shutdown()  # (first forgetting: a stop now hands over, and would score what it still held)

    async def all_scored() -> bool:
        return len(await session_scores(kept)) == 6

    await until(all_scored, timeout_s=40)
    await asyncio.sleep(2.0)
    found = await session_scores(kept)
    assert found == {f"conv-{i}": (3.0, 1) for i in range(6)}
    assert kept.fleet is not None and kept.fleet.member is not None
    # Taken up by either path: restored at the member change, or (when the round's turn poll saw the new members
    # before its member-change step did, as in a CI run) every turn of them added by the turn poll.
    member = kept.fleet.member
    assert member.sessions_taken_over >= len(owned_by_lost) or member.turns_taken >= 3 * len(owned_by_lost)


async def _count(service: Service, sql: str, expected: int) -> bool:
    return int((await query(service, sql))[0][0]) >= expected


async def test_a_rule_change_on_one_replica_reaches_every_replica(
    make_fleet: MakeFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replicas = await make_fleet(3, [SESSION_RULE])
    new = {"rules": [{"name": "turns-only", "target": "session", "scorers": ["turn_count"]}]}
    async with aiohttp.ClientSession() as http:
        first = replicas[0].api
        assert first is not None
        async with http.put(f"http://127.0.0.1:{first.port}/api/v1/rules", json=new) as response:
            assert response.status == 200, await response.text()
            version = (await response.json())["version"]
        started = time.monotonic()

        async def converged() -> bool:
            return all(s.rule_control.rule_set.version == version for s in replicas)

        await until(converged, timeout_s=10)
        assert time.monotonic() - started < 10
        last = replicas[2].api
        assert last is not None

        async def reported() -> bool:
            async with http.get(f"http://127.0.0.1:{last.port}/api/v1/rules") as response:
                body = await response.json()
            fleet = body["fleet"]
            applied = {name: r["rules_version"] for name, r in fleet["replicas"].items()}
            return bool(body["version"] == version and applied == {"r0": version, "r1": version, "r2": version})

        await until(reported, timeout_s=10)
    assert all(s.live is not None and list(s.live.scorers) == ["turns-only"] for s in replicas)
    # rules diff, against any replica, compares with the fleet's set and names it.
    assert last is not None
    config = tmp_path / "cli.yaml"
    config.write_text(f"api: {{port: {last.port}}}\n")
    wanted = tmp_path / "wanted.yaml"
    wanted.write_text("rules: [{name: turns-only, target: session, scorers: [turn_count]}]\n")
    code = await asyncio.to_thread(main, ["rules", "diff", str(wanted), "-c", str(config)])
    out = capsys.readouterr().out
    assert code == 0 and f"fleet rules v1 ({version}) on 3 replicas" in out and "same rules" in out


async def test_rate_caps_are_shared_so_the_fleet_keeps_the_configured_cap(make_fleet: MakeFleet) -> None:
    rule = {"name": "capped", "target": "run", "max_per_minute": 10, "scorers": ["completeness"]}
    replicas = await make_fleet(2, [rule])
    await send(replicas, rag_traces(40))

    async def decided() -> bool:
        return await _count(replicas[0], "SELECT count() FROM score_decisions FINAL WHERE Rule = 'capped'", 40)

    await until(decided)
    rows = await query(
        replicas[0], "SELECT Decision, count() FROM score_decisions FINAL WHERE Rule = 'capped' GROUP BY Decision"
    )
    counts = dict(rows)
    assert 0 < counts.get("sampled", 0) <= 10, counts  # two replicas, 5 a minute each: the fleet keeps 10


async def test_without_keeper_ingest_goes_on_and_rule_changes_are_refused(chdb_dsn: str, tmp_path: Path) -> None:
    from tests.zookeeper import _free_port

    config = make_service_config(chdb_dsn, new_database_name(), tmp_path)
    configure(config, [SESSION_RULE], 1.0)
    config.fleet = FleetConfig(keeper=f"127.0.0.1:{_free_port()}", replica="alone", session_timeout_s=2.0)
    service = Service(config)
    await service.start()  # does not wait for Keeper
    try:
        await send([service], rag_traces(3, session="conv-x"))
        assert await _count(service, "SELECT count() FROM otel_traces", 12)  # acknowledged and stored
        metrics = service.metrics()
        assert metrics["fleet_keeper_connected"] == 0.0 and metrics["fleet_leader"] == 0.0
        assert service.api is not None
        url = f"http://127.0.0.1:{service.api.port}/api/v1/rules"
        async with aiohttp.ClientSession() as http:
            async with http.put(url, json={"rules": [{"name": "other", "scorers": ["completeness"]}]}) as response:
                assert response.status == 503, await response.text()
                assert "a fleet changes its rules together" in await response.text()
            async with http.get(url) as response:
                body = await response.json()
        assert [rule["name"] for rule in body["rules"]] == ["conversation"]  # nothing changed
        assert "fleet coordination is unavailable" in body["fleet"]["error"]
    finally:
        await service.shutdown()


async def _one_lost_with_runs_unready(
    make_fleet: MakeFleet, max_wait_s: float
) -> tuple[Service, dict[int, list[ReadableSpan]]]:
    """Two replicas take 12 traces; the one that will be lost dies before any of its runs is ready. Returns the
    survivor and the traces by the replica they were routed to (0: the lost one)."""
    rule = {"name": "answers", "target": "run", "scorers": ["completeness"]}
    replicas = await make_fleet(2, [rule], runs={"quiet_period_s": 0.5, "max_wait_s": max_wait_s})
    lost, kept = replicas
    spans = rag_traces(12)
    routed = route(spans, 2)
    assert routed.get(0) and routed.get(1)
    assert lost.fleet is not None and lost.live is not None
    await lost.live.poller.stop()  # it will die before any of its runs is ready, however slow the machine
    await send(replicas, spans)  # acknowledged = stored; the runs wait in memory
    assert lost.live.assembler.stats.runs_ready == 0
    lost.fleet.fleet.expire()
    await lost.fleet.shutdown()
    await lost.shutdown()  # its pipelines stop: what it held in memory is not scored there
    return kept, routed


async def test_a_survivor_finds_a_lost_replicas_runs_behind_more_recent_traces_than_it_reads_at_once(
    make_fleet: MakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The survivor read the latest 10,000 recent traces and kept the ones begun before the loss: with more than
    that many traces arriving during its wait (170 traces/s over a 60 s ``max_wait_s``) it found none. Here the
    recent read is cut to 4 traces and 8 arrive during the wait."""
    monkeypatch.setattr(fleet_lost_runs, "StoredSpanSource", functools.partial(StoredSpanSource, max_traces=4))
    kept, routed = await _one_lost_with_runs_unready(make_fleet, max_wait_s=3.0)
    await until(lambda: _all_joined([kept], 1))
    await asyncio.sleep(0.2)
    await send([kept], rag_traces(8))  # begun after the loss: the survivor's own, decided by it

    async def all_decided() -> bool:
        return await _count(kept, "SELECT uniqExact(RunId) FROM score_decisions WHERE Rule = 'answers'", 20)

    await until(all_decided, timeout_s=30)
    rows = await query(kept, "SELECT RunId, count() FROM score_decisions WHERE Rule = 'answers' GROUP BY RunId")
    assert len(rows) == 20 and {count for _, count in rows} == {1}
    assert kept.fleet is not None and kept.fleet.member is not None
    assert kept.fleet.member.orphan_traces_taken == len({_trace_id(s) for s in routed[0]})


async def test_runs_a_lost_replica_was_assembling_are_scored_once_by_a_survivor(make_fleet: MakeFleet) -> None:
    kept, routed = await _one_lost_with_runs_unready(make_fleet, max_wait_s=1.0)

    async def all_decided() -> bool:
        return await _count(kept, "SELECT uniqExact(RunId) FROM score_decisions WHERE Rule = 'answers'", 12)

    await until(all_decided, timeout_s=60)
    await asyncio.sleep(2.0)  # a second decision, were one to be made, lands by now
    rows = await query(kept, "SELECT RunId, count() FROM score_decisions WHERE Rule = 'answers' GROUP BY RunId")
    assert len(rows) == 12 and {count for _, count in rows} == {1}
    assert kept.fleet is not None and kept.fleet.member is not None
    assert kept.fleet.member.orphan_traces_taken == len({_trace_id(s) for s in routed[0]})


async def test_a_replica_stopping_behind_slow_scoring_hands_over_what_it_had_no_time_to_finish(
    make_fleet: MakeFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slow judges keep the scoring queue full: a SIGTERM stop waited for every ready run to get into that queue,
    past ``shutdown_timeout_s``, and left without a handover note; the runs it had not finished were a lost
    replica's, taken up only after ``max_wait_s``. Now the stop has ``drain_timeout_s`` for its ready line and its
    queue together, and names what it left in the note: ready runs not decided, and runs whose jobs were cut."""
    gate = tmp_path / "scoring-is-slow"
    gate.touch()
    monkeypatch.setenv("SPANSCORE_TEST_SLOW_WHILE", str(gate))  # read by the code-scorer worker processes
    rule = {"name": "answers", "target": "run", "scorers": ["tests.e2e.slow_scorer:gated"]}
    replicas = await make_fleet(
        2, [rule], runs={"quiet_period_s": 0.2, "max_wait_s": 60.0},
        scoring={"queue_size": 1, "workers": 1, "drain_timeout_s": 1.0},
    )  # fmt: skip
    leaving, staying = replicas
    spans = rag_traces(24)
    assert len(route(spans, 2).get(0, [])) >= 6
    await send(replicas, spans)
    live = leaving.live
    assert live is not None

    async def in_line() -> bool:
        return live.poller.waiting > 0

    await until(in_line, timeout_s=30)
    await asyncio.wait_for(leaving.shutdown(), 20)  # what SIGTERM runs, within the service's shutdown_timeout_s
    left = live.left_undecided()
    assert left, "the stop finished every run: the test shows nothing"
    gate.unlink()  # the survivor scores at full speed

    async def all_scored() -> bool:
        return await _count(staying, "SELECT uniqExact(RunId) FROM scores FINAL WHERE Rule = 'answers'", 24)

    await until(all_scored, timeout_s=60)
    rows = await query(staying, "SELECT RunId, count() FROM scores FINAL WHERE Rule = 'answers' GROUP BY RunId")
    assert len(rows) == 24 and {count for _, count in rows} == {1}
    assert staying.fleet is not None and staying.fleet.member is not None
    assert staying.fleet.member.handed_over_traces >= len(left)
    assert staying.fleet.member.orphan_traces_taken == 0  # from the note, at once: not a lost replica's
