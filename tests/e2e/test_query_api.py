"""The query API over HTTP against a running service: what it refuses, why, and that nothing changes.

Every refusal is checked twice: the answer (status and a message naming what is wrong) and the
store (a fingerprint of every table's rows and columns is the same before and after). The limits
are set small in the config so that a slow, large or greedy query meets them in a test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from spanscore.records import SpanRecord
from spanscore.server.service import Service
from tests.service_setup import make_service_config, new_database_name
from tests.unit.storage.test_rollups import BASE_NS, make_scores

MAX_QUERY_BYTES = 4096
MAX_RESULT_ROWS = 100
MAX_RESULT_BYTES = 1 << 20
MAX_MEMORY_BYTES = 32 << 20
# A query the time limit must stop: summing a hash over a trillion generated numbers takes hours.
SLOW_SQL = "SELECT sum(cityHash64(number)) FROM numbers(1000000000000)"
# If the time limit did not cut the query, the request would hang until this client timeout fails the test.
CLIENT_TIMEOUT_S = 120


# One service for the module: every test here either reads or is refused, and each refusal compares the
# store's fingerprint before and after, so they can share it (a service per test took most of their time).
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(chdb_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Service, str]]:
    async with seeded_service(chdb_dsn, tmp_path_factory.mktemp("query-api")) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def own_api(chdb_dsn: str, tmp_path: Path) -> AsyncIterator[tuple[Service, str]]:
    """A service of the test's own, for a test that writes."""
    async with seeded_service(chdb_dsn, tmp_path) as running:
        yield running


@contextlib.asynccontextmanager
async def seeded_service(chdb_dsn: str, directory: Path) -> AsyncIterator[tuple[Service, str]]:
    """A service with small query limits over 300 scores and 50 spans; yields it and its query URL."""
    config = make_service_config(chdb_dsn, new_database_name(), directory)
    config.storage.query_max_bytes = MAX_QUERY_BYTES
    config.storage.query_max_execution_time_s = 2.0  # 0.5 s timed out a "SELECT 7" at load 18
    config.storage.query_max_result_rows = MAX_RESULT_ROWS
    config.storage.query_max_result_bytes = MAX_RESULT_BYTES
    config.storage.query_max_memory_bytes = MAX_MEMORY_BYTES
    service = Service(config)
    await service.start()
    try:
        await service.store.insert_scores(make_scores(300))
        spans = [
            SpanRecord(f"{i:032x}", f"{i:016x}", "", "agent.run", "Internal", BASE_NS + i, BASE_NS + i + 10**6)
            for i in range(50)
        ]
        await service.store.insert_spans(spans)
        yield service, f"http://127.0.0.1:{service.api.port}/api/v1/query"
    finally:
        await service.shutdown()


async def post(url: str, sql: str, fmt: str = "json", **extra: Any) -> tuple[int, Any]:
    """POST a query as JSON; returns the status and the decoded JSON body (or the raw text)."""
    timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(url, json={"sql": sql, "format": fmt, **extra}) as response:
            text = await response.text()
            return response.status, json.loads(text) if response.content_type.endswith("json") else text


async def fingerprint(service: Service) -> dict[str, Any]:
    """Tables, their columns and an order-free hash of their rows: changes if anything is written."""
    database = service.store.database

    def read() -> dict[str, Any]:
        query = service.store.internal_query
        tables = query(
            "SELECT name, engine FROM system.tables WHERE database = {db:String} ORDER BY name", {"db": database}
        )
        columns = query(
            "SELECT table, name, type FROM system.columns WHERE database = {db:String} ORDER BY table, position",
            {"db": database},
        )
        rows = {
            name: query(f"SELECT count(), groupBitXor(cityHash64(*)) FROM {database}.{name}")[0]
            for name, engine in tables
            if engine.endswith("MergeTree")
        }
        databases = query("SELECT name FROM system.databases ORDER BY name")
        return {"tables": tables, "columns": columns, "rows": rows, "databases": databases}

    return await asyncio.to_thread(read)


async def assert_refused(api: tuple[Service, str], sql: str, reason: str) -> str:
    service, url = api
    before = await fingerprint(service)
    status, body = await post(url, sql)
    assert status == 400, (sql, body)
    assert reason in body["error"], (sql, body)
    assert await fingerprint(service) == before, sql
    return str(body["error"])


async def test_the_fingerprint_sees_a_write(own_api: tuple[Service, str]) -> None:
    """The check the refusals rely on: a trusted write changes the fingerprint."""
    service, _ = own_api
    before = await fingerprint(service)
    assert before["rows"]["scores"][0] == 300 and before["rows"]["otel_traces"][0] == 50
    await service.store.insert_scores(make_scores(1, seed=99))
    assert await fingerprint(service) != before


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO scores (ScoreId) VALUES ('x')",
        "insert into otel_traces select * from otel_traces",
        "/* a comment first */ INSERT INTO scores (ScoreId) VALUES ('x')",
        "-- a comment first\nDELETE FROM scores WHERE 1",
        "ALTER TABLE scores DELETE WHERE 1",
        "ALTER TABLE scores UPDATE Score = 0 WHERE 1",
        "ALTER TABLE scores ADD COLUMN Extra UInt8",
        "DROP TABLE scores",
        "DROP DATABASE IF EXISTS {db}",
        "TRUNCATE TABLE otel_traces",
        "CREATE TABLE extra (a UInt8) ENGINE = Memory",
        "CREATE VIEW extra AS SELECT 1",
        "RENAME TABLE scores TO scores_old",
        "OPTIMIZE TABLE scores FINAL",
        "SYSTEM DROP MARK CACHE",
        "GRANT ALL ON *.* TO default",
        "KILL QUERY WHERE 1",
        "USE system",
        "(INSERT INTO scores (ScoreId) VALUES ('x'))",
    ],
)
async def test_writes_and_ddl_are_refused_and_change_nothing(api: tuple[Service, str], sql: str) -> None:
    error = await assert_refused(api, sql.replace("{db}", api[0].store.database), "only read queries are allowed")
    assert "got " in error  # names the statement it refused


async def test_a_write_behind_a_read_keyword_is_refused_by_the_engine(api: tuple[Service, str]) -> None:
    """The text filter lets WITH through; the engine's parse tree shows the INSERT behind it."""
    sql = "WITH 1 AS one INSERT INTO scores (ScoreId) SELECT 'x'"
    service, url = api
    before = await fingerprint(service)
    status, body = await post(url, sql)
    assert status == 400
    assert "got 'InsertQuery'" in body["error"], body
    assert await fingerprint(service) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 SETTINGS readonly = 0",
        "select count() from scores settings readonly=0, max_execution_time=0",
        "SELECT * FROM (SELECT 1 SETTINGS readonly = 0)",
        "SELECT 1 /* hidden? */ SETTINGS readonly = 2",
        # ClickHouse comments nest: the guard must not end this comment at the first */.
        "SELECT 1 AS a /* /* */ ' */ SETTINGS readonly = 0 --'",
        # $$...$$ is a string to ClickHouse: a quote inside it must not start a string for the guard.
        "SELECT $$'$$ AS a SETTINGS readonly = 0 --'",
        "SELECT $tag$'$tag$ AS a SETTINGS readonly = 0 --'",
    ],
)
async def test_settings_in_the_query_are_refused(api: tuple[Service, str], sql: str) -> None:
    await assert_refused(api, sql, "queries may not carry SETTINGS")


async def test_set_statements_are_refused(api: tuple[Service, str]) -> None:
    await assert_refused(api, "SET readonly = 0", "only read queries are allowed")


async def test_readonly_holds_whatever_the_request_carries(api: tuple[Service, str]) -> None:
    """Settings in the request body or URL reach nothing: the time limit still cuts a slow query.

    (Reading a setting with getSetting() is itself refused now: settings are none of a query's business.)
    """
    service, url = api
    status, body = await post(url, SLOW_SQL, settings={"readonly": 0, "max_execution_time": 0}, readonly=0)
    assert status == 400 and "TIMEOUT_EXCEEDED" in body["error"], body
    timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        params = {"format": "csv", "readonly": "0", "max_execution_time": "0"}
        async with session.post(url, params=params, json={"sql": SLOW_SQL}) as response:
            assert response.status == 400
            assert "TIMEOUT_EXCEEDED" in (await response.json())["error"]
    status, body = await post(url, "SELECT getSetting('readonly')")
    assert status == 400 and "function getSetting() is not allowed" in body["error"], body


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1; DROP TABLE scores",
        "SELECT 1;INSERT INTO scores (ScoreId) VALUES ('x');",
        "SELECT 1 -- the comment ends here\n; DROP TABLE scores",
        "SELECT ';' AS s; TRUNCATE TABLE otel_traces",
        "SELECT 1 /* /* nested */ */; DROP TABLE scores",
        "SELECT $$;$$; DROP TABLE scores",
    ],
)
async def test_multi_statements_are_refused(api: tuple[Service, str], sql: str) -> None:
    await assert_refused(api, sql, "only one statement per query")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ';' AS s;", ";"),
        ("SELECT $$;$$ AS s -- trailing comment", ";"),
        ("SELECT 'x' AS s; -- a comment after the only statement", "x"),
        ("SELECT 'y' AS s /* a /* nested */ comment */", "y"),
    ],
)
async def test_one_statement_with_semicolons_in_strings_and_comments_runs(
    api: tuple[Service, str], sql: str, expected: str
) -> None:
    status, body = await post(api[1], sql)
    assert status == 200, body
    assert body["data"] == [{"s": expected}]


async def test_over_long_queries_are_refused(api: tuple[Service, str]) -> None:
    long_sql = "SELECT " + ", ".join(["1"] * (MAX_QUERY_BYTES // 2)) + " FROM scores"
    error = await assert_refused(api, long_sql, f"longer than the limit of {MAX_QUERY_BYTES} bytes")
    assert "storage.query_max_bytes" in error
    service, url = api
    before = await fingerprint(service)
    # GET ?sql= is refused whatever its length (tests/e2e/test_api_edge.py says why).
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)) as session:
        async with session.get(url, params={"sql": "SELECT '" + "x" * MAX_QUERY_BYTES + "'"}) as response:
            assert response.status == 405
    # Far over: a body larger than the listener reads at all is refused before it is parsed.
    huge = "SELECT " + "1," * (1 << 20) + "1"
    status, body = await post(url, huge)
    assert status == 413, body
    assert "too large" in body["error"] and str(MAX_QUERY_BYTES) in body["error"], body
    assert await fingerprint(service) == before


async def test_blocked_table_functions_are_refused(api: tuple[Service, str]) -> None:
    await assert_refused(api, "SELECT * FROM file('/etc/hostname', 'LineAsString')", "table function file()")
    await assert_refused(api, "SELECT * FROM url('http://127.0.0.1:9/', 'CSV', 'a String')", "table function url()")


async def test_a_slow_query_is_cut_at_the_time_limit(api: tuple[Service, str]) -> None:
    service, url = api
    status, body = await post(url, SLOW_SQL)
    assert status == 400, body
    assert "cut at the time limit of 2 s" in body["error"], body
    assert "storage.query_max_execution_time_s" in body["error"]
    assert "TIMEOUT_EXCEEDED" in body["error"]  # the engine's own reason is kept
    # The reader is free again: the next query answers.
    status, body = await post(url, "SELECT count() AS n FROM scores")
    assert (status, body["data"]) == (200, [{"n": 300}])


async def test_results_over_the_row_cap_are_refused_and_at_the_cap_returned(api: tuple[Service, str]) -> None:
    _, url = api
    status, body = await post(url, f"SELECT number FROM numbers({MAX_RESULT_ROWS})")
    assert status == 200 and len(body["data"]) == MAX_RESULT_ROWS
    status, body = await post(url, f"SELECT number FROM numbers({MAX_RESULT_ROWS * 10})")
    assert status == 400, body
    assert f"over the limit of {MAX_RESULT_ROWS} rows" in body["error"]
    assert "max rows" in body["error"]  # the engine's words: it was the row count
    # Scores rows, not generated ones: the cap applies to real tables too.
    status, body = await post(url, "SELECT ScoreId FROM scores")
    assert status == 400 and "storage.query_max_result_rows" in body["error"]


async def test_results_over_the_byte_cap_are_refused(api: tuple[Service, str]) -> None:
    _, url = api
    # 20 rows of 100 KB each: under the row cap, twice the byte cap.
    sql = "SELECT randomPrintableASCII(100000) AS blob FROM numbers(20)"
    status, body = await post(url, sql, fmt="tsv")
    assert status == 400, body
    assert "max bytes" in body["error"] and "storage.query_max_result_bytes" in body["error"]


async def test_a_query_over_the_memory_cap_is_stopped(api: tuple[Service, str]) -> None:
    _, url = api
    status, body = await post(url, "SELECT length(groupArray(number)) FROM numbers(100000000)")
    assert status == 400, body
    assert "memory limit" in body["error"] and "storage.query_max_memory_bytes" in body["error"]
    assert "MEMORY_LIMIT_EXCEEDED" in body["error"]


async def test_a_refused_result_leaves_nothing_behind(api: tuple[Service, str]) -> None:
    """The rows a query wrote before a limit stopped it reach no later answer, nor spanscore's own calls."""
    service, url = api
    for sql in (f"SELECT number AS leaked FROM numbers({MAX_RESULT_ROWS * 10})", SLOW_SQL):
        status, _ = await post(url, sql, fmt="csv")
        assert status == 400
        status, text = await post(url, "SELECT 7 AS n", fmt="csv")
        assert (status, text) == (200, '"n"\n7\n')
    # The writer's connection was never involved: an insert right after a refusal goes through.
    status, _ = await post(url, f"SELECT number FROM numbers({MAX_RESULT_ROWS * 10})")
    assert status == 400
    await service.store.insert_scores(make_scores(1, seed=99))
    status, body = await post(url, "SELECT count() AS n FROM scores")
    assert (status, body["data"]) == (200, [{"n": 301}])
