"""Long bound values reach the stand-in as a server gets them: in a form, not the URL (#36, fleet smoke).

clickhouse-connect sends a query's bound parameters as ``multipart/form-data`` once they are too long for a
URL (about 4 KB: some 115 trace ids). A stand-in that read that body as SQL answered "Syntax error" to every
such query, so a replica with many runs ready at once (a survivor after a kill) could neither dispatch them
nor run its fleet rounds, and ``bench.fleet``'s alert never resolved. A server reads the form; so must the
stand-in, or the bench measures the stand-in instead of the fleet.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.recovery import handled_runs
from spanscore.testing.clickhouse_standin import ClickHouseStandIn, StandInUser


@pytest.fixture
def store(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    server = ClickHouseStandIn(urlparse(chdb_dsn).path, {"owner": StandInUser("pw")})
    server.start()
    opened = ClickHouseStore(server.dsn("owner"), database_name, query_allow_writable=True)
    opened.open_schema()
    try:
        yield opened
    finally:
        opened.close()
        server.stop()


def test_a_query_whose_bound_values_travel_as_a_form_is_answered(store: ClickHouseStore) -> None:
    ids = [str(number) for number in range(0, 6000, 3)]  # about 10 KB of bound values
    sql = "SELECT count() FROM numbers(3000) WHERE toString(number) IN {ids:Array(String)}"
    assert store.internal_query(sql, {"ids": ids}) == [(1000,)]


def test_the_handled_runs_of_many_traces_are_read(store: ClickHouseStore) -> None:
    assert handled_runs(store, [f"{number:032x}" for number in range(500)]) == {}
