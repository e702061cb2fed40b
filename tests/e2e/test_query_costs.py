"""One row whose work the time limit cannot stop, and types that name a function: refused on the parse tree.

Each query below was sent to a real service and ran far past its time limit (the engine checks the
limit between blocks only), or ran a disallowed aggregate's state code through a type name. Each is
now refused with a 400 that names the argument and the fix, and changes nothing; the same functions
with a small literal argument still answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from spanscore.server.service import Service
from tests.e2e.test_query_api import assert_refused, post, seeded_service

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(chdb_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Service, str]]:
    async with seeded_service(chdb_dsn, tmp_path_factory.mktemp("query-costs")) as running:
        yield running


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        # Observed: 77.6 s against a 10 s limit.
        ("SELECT repeat('a', 1000000) LIKE concat(repeat('%a', 4000), '%b')", "the pattern of like()"),
        ("SELECT match(SpanName, SpanName) FROM otel_traces", "the pattern of match()"),
        ("SELECT 'x' ILIKE '" + "%a" * 200 + "'", "the pattern of ilike()"),
        ("WITH concat(repeat('%a', 4000), '%b') AS p SELECT repeat('a', 1000000) LIKE p", "the pattern of like()"),
        ("SELECT splitByRegexp(repeat('(a|aa)', 100), 'x')", "the pattern of splitByRegexp()"),
        # Observed: 11.6 s for two 160,000-element ranges.
        ("SELECT hasAny(range(160000), arrayMap(x -> x + 1000000, range(160000)))", "length(arrayIntersect(a, b))"),
        ("SELECT hasAll(range(160000), range(1, 160001))", "length(arrayIntersect(a, b))"),
        # Grows with haystack x needle: a 100 kB needle over 1 MB ran past 100 s.
        (
            "SELECT positionCaseInsensitive(repeat('a', 1000000), concat(repeat('a', 100000), 'b'))",
            "positionCaseInsensitive() needs a string literal",
        ),
        ("SELECT countSubstrings(SpanName, SpanName) FROM otel_traces", "countSubstrings() needs a string literal"),
        ("SELECT multiSearchAny('abc', [repeat('a', 300)])", "multiSearchAny() needs a literal array"),
    ],
)
async def test_a_call_whose_one_row_cost_is_unbounded_is_refused(
    api: tuple[Service, str], sql: str, reason: str
) -> None:
    await assert_refused(api, sql, reason)


GROUP_ARRAY_INSERT_AT = "AggregateFunction(groupArrayInsertAt, UInt64, UInt64)"


@pytest.mark.parametrize(
    ("sql", "function"),
    [
        # Observed: a disallowed aggregate's state code ran through a cast.
        (f"SELECT toTypeName(CAST(unhex('00') AS {GROUP_ARRAY_INSERT_AT}))", "groupArrayInsertAt"),
        (
            "SELECT toTypeName(CAST(unhex('00'), 'AggregateFunction(1, `groupArrayInsertAt`, UInt64, UInt64)'))",
            "groupArrayInsertAt",
        ),
        ("SELECT CAST([] AS Array(SimpleAggregateFunction(groupArrayInsertAt, UInt64)))", "groupArrayInsertAt"),
        (
            "SELECT accurateCastOrNull(1, 'Tuple(a AggregateFunction(sequenceCount(\\'(?1)\\'), DateTime, UInt8))')",
            "sequenceCount",
        ),
        (f"SELECT JSONExtract('1', '{GROUP_ARRAY_INSERT_AT}')", "groupArrayInsertAt"),
    ],
)
async def test_a_type_naming_a_disallowed_aggregate_is_refused(
    api: tuple[Service, str], sql: str, function: str
) -> None:
    error = await assert_refused(api, sql, "is not allowed in the query API")
    assert function in error


async def test_a_type_that_is_not_a_literal_is_refused(api: tuple[Service, str]) -> None:
    await assert_refused(
        api, "WITH 'AggregateFunction(groupArrayInsertAt, UInt64, UInt64)' AS t SELECT CAST(1, t)", "string literal"
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 'agent.run' LIKE 'agent.%' AS v", 1),
        ("SELECT count() AS v FROM otel_traces WHERE match(SpanName, '^agent')", 50),
        ("SELECT hasAny(range(160000), [5, 7]) AS v", 1),
        ("SELECT length(arrayIntersect(range(1000), range(500, 2000))) AS v", 500),
        ("SELECT count() AS v FROM otel_traces WHERE position(SpanName, 'run') > 0", 50),
        ("SELECT toTypeName(CAST(1 AS Nullable(UInt64))) = 'Nullable(UInt64)' AS v", 1),
        ("SELECT toTypeName(uniqState(1)) = 'AggregateFunction(uniq, UInt8)' AS v", 1),
        ("SELECT length(toString(CAST(uniqState(1) AS AggregateFunction(uniq, UInt8)))) > 0 AS v", 1),
    ],
)
async def test_the_same_functions_with_small_literal_arguments_answer(
    api: tuple[Service, str], sql: str, expected: int
) -> None:
    _, url = api
    status, body = await post(url, sql)
    assert status == 200, body
    assert body["data"][0]["v"] == expected
