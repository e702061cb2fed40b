"""Store options reach the schema: TTLs from config, cluster DDL when a cluster is named."""

from __future__ import annotations

import pytest

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.migrations import migrate


def test_ttls_from_the_store_options(chdb_dsn: str, database_name: str) -> None:
    store = ClickHouseStore(chdb_dsn, database_name, spans_ttl_days=7, scores_ttl_days=90)
    store.open()
    try:
        spans = store.internal_query(f"SHOW CREATE TABLE {database_name}.otel_traces")[0][0]
        scores = store.internal_query(f"SHOW CREATE TABLE {database_name}.scores")[0][0]
        assert "TTL" in spans and "7" in spans.split("TTL", 1)[1]
        assert "TTL" in scores and "90" in scores.split("TTL", 1)[1]
    finally:
        store.close()


class RecordingClient:
    def __init__(self) -> None:
        self.statements: list[str] = []

    def command(self, sql: str) -> object:
        self.statements.append(sql)
        return ""


@pytest.mark.parametrize("cluster", [None, "prod"])
def test_migrate_on_a_cluster_issues_cluster_ddl(cluster: str | None) -> None:
    client = RecordingClient()
    applied = migrate(client, "spanscore", cluster=cluster)
    assert applied == [m.version for m in load_migrations("spanscore")]
    creates = [s for s in client.statements if s.lstrip().upper().startswith("CREATE")]
    if cluster is None:
        assert not any("ON CLUSTER" in s for s in creates)
    else:
        assert all("ON CLUSTER prod" in s for s in creates)
        assert any("ReplicatedMergeTree" in s for s in creates)
        assert any("Distributed(" in s for s in creates)
