"""Live scores share their inserts: each insert into ``scores`` pays its roll-up views' fixed engine cost (#43)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from spanscore.config import ServiceConfig
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.scores import ScoreRow
from spanscore.storage.write import paths as write_paths
from tests.unit.storage.test_rollups import make_scores

ROWS = 12
APART_S = 0.05
"""Scores arrive one at a time, as workers finish, 50 ms apart: far more than a flush interval of 5 ms, far less
than 0.25 s, so how the first insert is made says which wait applied, whatever the machine's load."""


def _storage(tmp_path: Path, **settings: object) -> object:
    return ServiceConfig.model_validate({"storage": {"spool_dir": str(tmp_path / "spool"), **settings}}).storage


async def _write_one_at_a_time(store: ClickHouseStore, writer_of: str, tmp_path: Path, **settings: object) -> list[int]:
    """Hand ``ROWS`` score rows to a writer one by one, concurrently as the dispatcher does; each insert's rows."""
    inserts: list[int] = []
    insert_scores = store.insert_scores

    async def counted(rows: Sequence[ScoreRow]) -> None:
        inserts.append(len(rows))
        await insert_scores(rows)

    store.insert_scores = counted  # type: ignore[method-assign]
    writer = getattr(write_paths, writer_of)(store, _storage(tmp_path, **settings))
    await writer.start()
    try:
        tasks = []
        for row in make_scores(ROWS):
            tasks.append(asyncio.create_task(writer.consume([row])))
            await asyncio.sleep(APART_S)
        await asyncio.gather(*tasks)
    finally:
        await writer.shutdown()
    stored = store.internal_query(f"SELECT count() FROM {store.database}.scores FINAL")[0][0]
    assert stored == ROWS, f"{stored} of {ROWS} score rows stored"
    assert sum(inserts) == ROWS
    return inserts


async def test_live_scores_arriving_one_by_one_share_an_insert(store: ClickHouseStore, tmp_path: Path) -> None:
    """The first score waits up to 0.25 s for the next ones (on the code before, 5 ms: it was inserted alone)."""
    inserts = await _write_one_at_a_time(store, "score_writer", tmp_path)
    assert inserts[0] >= 2, f"inserts of {inserts} rows for {ROWS} scores handed on {APART_S * 1000:.0f} ms apart"
    assert len(inserts) < ROWS


async def test_the_wait_comes_from_the_config(store: ClickHouseStore, tmp_path: Path) -> None:
    """``storage.score_flush_interval_s: 0`` inserts a score as soon as storage takes it."""
    inserts = await _write_one_at_a_time(store, "score_writer", tmp_path, score_flush_interval_s=0)
    assert inserts[0] == 1, f"inserts of {inserts} rows with no wait"


async def test_outside_scores_are_not_held_for_it(store: ClickHouseStore, tmp_path: Path) -> None:
    """Outside scores' senders wait for the insert: their writer keeps ``storage.flush_interval_s`` (5 ms)."""
    inserts = await _write_one_at_a_time(store, "feedback_writer", tmp_path, score_flush_interval_s=5)
    assert inserts[0] == 1, f"inserts of {inserts} rows for outside scores"


@pytest.mark.parametrize("value", [-1, 11])
def test_a_bad_interval_is_refused_naming_the_key(tmp_path: Path, value: float) -> None:
    with pytest.raises(ValueError, match="score_flush_interval_s"):
        _storage(tmp_path, score_flush_interval_s=value)
