"""Queries are bounded together: abandoned heavy queries are killed and do not hold up the next one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from spanscore.errors import PermanentError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.query.guard import QueryLimits

# Hours of work; the time limit below is far longer than the test may take.
HEAVY_SQL = "SELECT sum(cityHash64(number)) FROM numbers(1000000000000)"
# A hang guard only (a failing test must not wait for the engine's time limit), not a speed assertion.
HANG_GUARD_S = 120


@pytest.fixture
def patient_store(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    """A store whose time limit would let a heavy query run for ten minutes."""
    opened = ClickHouseStore(chdb_dsn, database_name, limits=QueryLimits(max_execution_time_s=600))
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


def running_marked_queries(store: ClickHouseStore) -> int:
    """Heavy queries the engine is running now (found by their text, so the count itself is not one)."""
    rows = store.internal_query(
        "SELECT count() FROM system.processes WHERE query LIKE '%numbers(1000000000000)%' "
        "AND query NOT LIKE '%system.processes%'"
    )
    return int(rows[0][0])


def wait_until_running(store: ClickHouseStore, count: int) -> None:
    """Block until ``count`` marked queries run in the engine (bounded by the hang guard)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while running_marked_queries(store) < count:
        assert time.monotonic() < deadline, "the heavy queries never started"
        time.sleep(0.05)


@pytest.mark.reliability("query-api-own-database")
async def test_abandoned_heavy_queries_are_killed_and_a_later_select_answers(patient_store: ClickHouseStore) -> None:
    heavy = [asyncio.ensure_future(patient_store.query(HEAVY_SQL)) for _ in range(5)]
    await asyncio.to_thread(wait_until_running, patient_store, 2)  # the readers are busy
    for task in heavy:
        task.cancel()
    outcomes = await asyncio.wait_for(asyncio.gather(*heavy, return_exceptions=True), HANG_GUARD_S)
    assert all(isinstance(outcome, asyncio.CancelledError) for outcome in outcomes)
    answer = await asyncio.wait_for(patient_store.query("SELECT 1 AS one", "csv"), HANG_GUARD_S)
    assert answer == b'"one"\n1\n'
    # The evidence that they were cancelled, not finished: none is still running in the engine.
    assert await asyncio.to_thread(running_marked_queries, patient_store) == 0


@pytest.mark.reliability("query-api-own-database")
async def test_the_dashboard_reader_answers_while_api_readers_are_busy(patient_store: ClickHouseStore) -> None:
    heavy = [asyncio.ensure_future(patient_store.query(HEAVY_SQL)) for _ in range(3)]
    try:
        await asyncio.to_thread(wait_until_running, patient_store, 2)
        columns, rows = await asyncio.wait_for(patient_store.read("SELECT 1 AS one", {}), HANG_GUARD_S)
        assert (columns, rows) == (("one",), [(1,)])
        assert not any(task.done() for task in heavy)  # answered while every API reader was still busy
    finally:
        for task in heavy:
            task.cancel()
        await asyncio.gather(*heavy, return_exceptions=True)


async def test_a_query_cancelled_before_a_reader_is_free_never_runs(patient_store: ClickHouseStore) -> None:
    busy = [asyncio.ensure_future(patient_store.query(HEAVY_SQL)) for _ in range(2)]
    await asyncio.to_thread(wait_until_running, patient_store, 2)
    waiting = asyncio.ensure_future(patient_store.query(HEAVY_SQL))
    await asyncio.sleep(0.2)
    waiting.cancel()
    for task in busy:
        task.cancel()
    await asyncio.wait_for(asyncio.gather(*busy, waiting, return_exceptions=True), HANG_GUARD_S)
    answer = await asyncio.wait_for(patient_store.query("SELECT 2 AS two", "csv"), HANG_GUARD_S)
    assert answer == b'"two"\n2\n'
    assert await asyncio.to_thread(running_marked_queries, patient_store) == 0
    with pytest.raises(PermanentError):
        await patient_store.query("SELECT 1 SETTINGS readonly = 0")
