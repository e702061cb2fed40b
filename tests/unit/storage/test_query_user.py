"""A server query user that can write is refused at start-up unless explicitly allowed."""

from __future__ import annotations

import pytest

from spanscore.errors import ConfigError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.connection import connect
from spanscore.storage.query.readers import refuse_writable_query_user


@pytest.mark.reliability("query-api-own-database")
def test_a_user_that_can_write_is_refused_with_the_way_out(store: ClickHouseStore) -> None:
    with pytest.raises(ConfigError, match="storage.query_dsn") as refused:
        refuse_writable_query_user(store.client, "clickhouse://writer:***@db:8123")
    assert "storage.query_allow_writable" in str(refused.value) and "***" in str(refused.value)


def test_a_user_kept_read_only_by_the_engine_is_accepted(store: ClickHouseStore) -> None:
    reader = connect(store.dsn, store.database)
    try:
        reader.set_client_setting("readonly", 1)  # what a readonly settings profile gives a server user
        refuse_writable_query_user(reader, "clickhouse://reader@db:8123")
    finally:
        reader.close()
