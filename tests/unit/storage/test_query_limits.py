"""The limits belong to the query API's reader connections, not to a query's text (#26).

Each reader is a real embedded-engine connection; what runs on it is what an API query runs under.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from spanscore.errors import PermanentError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.query.guard import QueryLimits

LIMITS = QueryLimits(max_result_rows=50, max_result_bytes=1 << 20, max_block_size=256, max_range_elements=100_000)


@pytest.fixture
def limited(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    opened = ClickHouseStore(chdb_dsn, database_name, limits=LIMITS, query_readers=1)
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


def on_reader(store: ClickHouseStore, sql: str) -> list[tuple[object, ...]]:
    """Trusted SQL on the API's own reader connection: shows the settings its queries run under."""
    assert store._readers is not None
    with store._readers.use() as reader:
        return list(reader.query(sql).result_rows)


@pytest.mark.reliability("query-api-own-database")
def test_blocks_are_small_so_time_is_checked_often(limited: ClickHouseStore) -> None:
    """The engine checks the time limit and KILL between blocks: a block of 65,409 rows could run for seconds."""
    assert on_reader(limited, "SELECT max(blockSize()) FROM numbers(100000)") == [(LIMITS.max_block_size,)]


@pytest.mark.reliability("query-api-own-database")
def test_the_readers_settings_cannot_be_undone(limited: ClickHouseStore) -> None:
    for change in ("SET readonly = 0", "SET max_result_rows = 0", "SET max_execution_time = 0"):
        assert limited._readers is not None
        with limited._readers.use() as reader, pytest.raises(DatabaseError, match="readonly"):
            reader.command(change)
    assert on_reader(limited, "SELECT getSetting('max_result_rows'), getSetting('readonly')") == [(50, 1)]


def test_range_is_capped_per_block(limited: ClickHouseStore) -> None:
    with pytest.raises(PermanentError, match="greater than the allowed maximum of 100000"):
        limited.query_sync("SELECT length(range(200000)) AS n", "csv")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT number FROM numbers(1000) UNION ALL SELECT 0",
        "SELECT arrayJoin(range(1000)) AS n",
        "SELECT n FROM (SELECT arrayJoin(range(1000)) AS n) UNION ALL SELECT 1 UNION ALL SELECT 2",
        "SELECT 1 EXCEPT SELECT 2 UNION ALL SELECT arrayJoin(range(1000))",
    ],
)
def test_caps_bind_a_query_cut_by_one_and_the_next(limited: ClickHouseStore, sql: str) -> None:
    with pytest.raises(PermanentError, match="over the limit of 50 rows"):
        limited.query_sync(sql, "csv")
    assert limited.query_sync("SELECT number AS n FROM numbers(50)", "csv").count(b"\n") == 51
