from __future__ import annotations

from collections.abc import Iterator

import pytest

from spanscore.storage.clickhouse import ClickHouseStore


@pytest.fixture
def store(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    """An opened store in a database of its own, closed after the test."""
    opened = ClickHouseStore(chdb_dsn, database_name)
    opened.open()
    try:
        yield opened
    finally:
        opened.close()
