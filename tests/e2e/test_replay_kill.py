"""A process killed after a replayed insert returned and before it deleted the spool files stores nothing twice.

Two real processes over one embedded store and one spool directory: the first acknowledges batches,
inserts them and is SIGKILLed at exactly that point (its delete is replaced by a kill of itself); the
successor replays what it left. Spans go behind an acknowledging spool, merged into one insert;
scores are spooled after a failed live insert and replayed one file at a time.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spanscore.storage.write.spool_log import waiting_batches

ROOT = Path(__file__).resolve().parents[2]
BATCHES = 4
ROWS = 25


async def _run(
    role: str, kind: str, settings: dict[str, object], child_module: str = "tests.e2e.replay_kill_child"
) -> list[str]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", child_module, role, kind, json.dumps(settings),
        stdout=subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(child.communicate(), 120)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    return [child.returncode, *out.decode().splitlines()]  # type: ignore[list-item]


@pytest.mark.reliability("no-acknowledged-span-lost")
@pytest.mark.parametrize("kind", ["spans", "scores"])
@pytest.mark.parametrize("kill_at", ["before_delete", "done_unsynced"])
async def test_a_kill_between_insert_and_delete_stores_nothing_twice(tmp_path: Path, kind: str, kill_at: str) -> None:
    """kill -9 after a replayed insert returned, before its batches left the spool: the next process stores once.

    ``done_unsynced``: the kill comes with the log's DONE record for the batches written and not synced."""
    settings = {
        "kill_at": kill_at,
        "dsn": f"chdb://{(tmp_path / 'chdb').as_posix()}",
        "database": "replay_kill",
        "spool_dir": (tmp_path / "spool").as_posix(),
        "batches": BATCHES,
        "rows": ROWS,
    }
    sent = BATCHES * ROWS
    first = await _run("first", kind, settings)
    assert first == [-9, f"acknowledged {sent}", "killing"], "the first process did not die between insert and delete"
    if kill_at == "before_delete":
        assert waiting_batches(tmp_path / "spool" / kind), "the kill left no spooled batch to replay"
    successor = await _run("successor", kind, settings)
    assert successor[0] == 0, successor
    held = json.loads(successor[-1])
    assert held == {"rows": sent, "distinct": sent, "downstream": sent, "left": 0}
