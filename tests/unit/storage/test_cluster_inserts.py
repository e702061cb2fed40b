"""On a cluster an insert returns once its rows are on their shards, not queued on one node (#36, item 11).

Through a ``Distributed`` table, an insert without ``distributed_foreground_insert`` is answered once the rows
are queued on the node that took it: under ``acknowledge: stored`` a span counted as stored while a node
loss could still take it. The store speaks to a stand-in server (``clickhouse://``) that keeps every request's
settings; the cluster's own DDL cannot run here, so the schema is the single-node one and only the insert
settings are observed.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.testing.clickhouse_standin import ClickHouseStandIn, StandInUser
from tests.service_setup import new_database_name
from tests.unit.storage.test_rollups import make_scores


@pytest.fixture
def standin(chdb_dsn: str) -> Iterator[ClickHouseStandIn]:
    server = ClickHouseStandIn(urlparse(chdb_dsn).path, {"owner": StandInUser("pw", {"async_insert": "0"})})
    server.start()
    yield server
    server.stop()


def _inserts(standin: ClickHouseStandIn) -> list[dict[str, str]]:
    return [request.settings for request in standin.requests if request.sql.lstrip().upper().startswith("INSERT")]


@pytest.mark.parametrize(("cluster", "wanted"), [("prod", "1"), (None, None)])
def test_inserts_wait_for_their_shards_on_a_cluster(
    standin: ClickHouseStandIn, chdb_dsn: str, cluster: str | None, wanted: str | None
) -> None:
    database = new_database_name()
    migrated = ClickHouseStore(chdb_dsn, database)  # the stand-in serves this embedded store: migrate it in process
    migrated.open_schema()
    migrated.close()
    store = ClickHouseStore(standin.dsn("owner"), database, cluster=cluster, migrate_schema=False)
    store.open_schema()
    try:
        standin.requests.clear()
        store.insert_scores_sync(make_scores(3))
        inserts = _inserts(standin)
        assert inserts
        assert {settings.get("distributed_foreground_insert") for settings in inserts} == {wanted}
        # And its own reads, whose IN and JOIN subqueries read a second Distributed table (global on a cluster).
        standin.requests.clear()
        store.internal_query("SELECT 1", {})
        product = {request.settings.get("distributed_product_mode") for request in standin.requests}
        assert product == {"global" if cluster else None}
    finally:
        store.close()
