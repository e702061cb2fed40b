"""test_replay_kill's kill between a merged insert and its delete, with the merged batches read back from disk.

Since f01437e batches past the writer's memory bound merge too; the successor must find the merged set named in
the replay's intent and insert it again under the same token, not its batches alone (written by an independent
review, session 27).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanscore.storage.write.spool_log import waiting_batches
from tests.e2e.test_replay_kill import _run

CHILD = "tests.e2e.replay_kill_read_back_child"
BATCHES = 4
ROWS = 25


@pytest.mark.reliability("no-acknowledged-span-lost")
@pytest.mark.parametrize("keep_bytes", [1, 3000], ids=["all-read-back", "some-kept"])
@pytest.mark.parametrize("kill_at", ["before_delete", "done_unsynced"])
async def test_a_kill_after_a_merged_read_back_insert_stores_nothing_twice(
    tmp_path: Path, kill_at: str, keep_bytes: int
) -> None:
    """kill -9 after a merged insert of batches read back from disk, before their delete: stored once after."""
    settings = {
        "kill_at": kill_at, "dsn": f"chdb://{(tmp_path / 'chdb').as_posix()}", "database": "replay_read_back",
        "spool_dir": (tmp_path / "spool").as_posix(), "batches": BATCHES, "rows": ROWS, "keep_bytes": keep_bytes,
    }  # fmt: skip
    sent = BATCHES * ROWS
    first = await _run("first", "spans", settings, CHILD)
    assert first == [-9, f"acknowledged {sent}", "killing"]
    if kill_at == "before_delete":
        assert waiting_batches(tmp_path / "spool" / "spans")
    successor = await _run("successor", "spans", settings, CHILD)
    assert successor[0] == 0, successor
    assert json.loads(successor[-1]) == {"rows": sent, "distinct": sent, "downstream": sent, "left": 0}
