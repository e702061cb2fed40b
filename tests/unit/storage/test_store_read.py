"""``ClickHouseStore.read``: fixed SQL with bound parameters, run under the user-query limits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spanscore.errors import PermanentError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.query.guard import QueryLimits


@pytest.fixture
def store(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    opened = ClickHouseStore(chdb_dsn, database_name, limits=QueryLimits(max_execution_time_s=0.5))
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


def test_values_travel_as_parameters(store: ClickHouseStore) -> None:
    sql = "SELECT {text:String} AS text, {n:UInt32} + 1 AS next"
    columns, rows = store.read_sync(sql, {"text": "x' OR '1'='1", "n": 41})
    assert columns == ("text", "next")
    assert rows == [("x' OR '1'='1", 42)]


def test_a_read_is_read_only(store: ClickHouseStore) -> None:
    with pytest.raises(PermanentError):
        store.read_sync("INSERT INTO score_decisions (Rule) VALUES ({rule:String})", {"rule": "sneaky"})
    assert store.internal_query("SELECT count() FROM score_decisions") == [(0,)]


def test_a_read_cut_by_the_time_limit_leaves_nothing_behind(store: ClickHouseStore) -> None:
    with pytest.raises(PermanentError):
        store.read_sync("SELECT sum(cityHash64(number)) FROM numbers(1000000000000)", {})
    # The next reads on both connections see only their own rows.
    assert store.read_sync("SELECT {n:UInt8} AS n", {"n": 7}) == (("n",), [(7,)])
    assert store.internal_query("SELECT 8") == [(8,)]
