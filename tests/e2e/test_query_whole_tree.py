"""Issue #26 end to end: the check covers the whole parsed tree, and the limits bind every part of a query.

A real ``Service`` on loopback answers each query; the store's fingerprint shows a refusal changed nothing.
"""

from __future__ import annotations

import pytest

from spanscore.server.service import Service
from tests.e2e.test_query_api import MAX_RESULT_BYTES, MAX_RESULT_ROWS, api, assert_refused, post

__all__ = ["api"]  # the fixture, imported for pytest

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the module's one service (see test_query_api)


@pytest.mark.reliability("query-api-own-database")
@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * APPLY(file) FROM (SELECT '/proc/self/environ' AS c)", "function file() is not allowed"),
        ("SELECT * APPLY(`file`) FROM (SELECT '/etc/hostname' AS c)", "function file() is not allowed"),
        ("SELECT * APPLY(sleepEachRow) FROM (SELECT 1 AS c)", "function sleepEachRow() is not allowed"),
        ("SELECT * APPLY(x -> sleepEachRow(x)) FROM (SELECT 1 AS c)", "function sleepEachRow() is not allowed"),
        ("SELECT * APPLY(x -> hostName()) FROM (SELECT 1 AS c)", "function hostName() is not allowed"),
        ("SELECT COLUMNS('c') APPLY(toString) APPLY(file) FROM (SELECT 'x' AS c)", "function file() is not allowed"),
        ("SELECT arrayMap(x -> getSetting(x), ['readonly'])", "function getSetting() is not allowed"),
        ("SELECT 1 UNION ALL SELECT * APPLY(file) FROM (SELECT 'x' AS c)", "function file() is not allowed"),
        # Not on the allowlist though no denylist named them: the host, the version, the session.
        ("SELECT version()", "function version() is not allowed"),
        ("SELECT currentDatabase()", "function currentDatabase() is not allowed"),
        ("SELECT * FROM (SELECT timezone())", "function timezone() is not allowed"),
    ],
)
async def test_every_function_in_the_tree_meets_the_allowlist(api: tuple[Service, str], sql: str, reason: str) -> None:
    error = await assert_refused(api, sql, reason)
    assert "allowlist" in error


@pytest.mark.reliability("query-api-own-database")
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT number FROM numbers(250000) UNION ALL SELECT 0",
        "SELECT 0 UNION ALL SELECT number FROM numbers(250000)",
        "SELECT arrayJoin(range(1000)) AS n",
        "SELECT arrayJoin(range(1000)) AS n ORDER BY n",
        "WITH 1 AS one SELECT number FROM numbers(250000) UNION ALL SELECT one",
    ],
)
async def test_the_row_cap_binds_every_select_of_a_query(api: tuple[Service, str], sql: str) -> None:
    error = await assert_refused(api, sql, f"over the limit of {MAX_RESULT_ROWS} rows")
    assert "storage.query_max_result_rows" in error


async def test_the_byte_cap_binds_a_union_too(api: tuple[Service, str]) -> None:
    rows = MAX_RESULT_BYTES // 50_000 * 2  # twice the byte cap, under the row cap
    sql = f"SELECT repeat('x', 100000) AS blob FROM numbers({rows}) UNION ALL SELECT 'y'"
    error = await assert_refused(api, sql, "storage.query_max_result_bytes")
    assert "max bytes" in error


async def test_a_union_under_the_caps_still_answers_in_order(api: tuple[Service, str]) -> None:
    sql = "SELECT number AS n FROM numbers(3) UNION ALL SELECT 7 AS n ORDER BY n DESC"
    status, body = await post(api[1], "SELECT * FROM (" + sql + ")")
    assert status == 200, body
    status, body = await post(api[1], "SELECT n FROM (SELECT number AS n FROM numbers(3)) ORDER BY n DESC")
    assert (status, [row["n"] for row in body["data"]]) == (200, [2, 1, 0]), body
