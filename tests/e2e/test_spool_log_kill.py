"""kill -9 in the middle of an append to the spool log: every acknowledged batch comes back once, in order.

A real child process appends and kills itself at one point of an append (after its record was written
and before the fdatasync, or with half of its record written); the test reopens the log as the next
process would, drains it, and appends again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spanscore.storage.write import log_records
from spanscore.storage.write.spool_log import SpoolLog

ROOT = Path(__file__).resolve().parents[2]


def _run_child(directory: Path, point: str, after: int, threads: int) -> list[int]:
    child = subprocess.run(
        [sys.executable, "-m", "tests.e2e.spool_log_kill_child", str(directory), point, str(after), str(threads)],
        cwd=ROOT, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    lines = child.stdout.decode().splitlines()
    assert child.returncode == -9 and "not killed" not in lines, (child.returncode, child.stderr.decode()[-2000:])
    return [int(line.split()[1]) for line in lines if line.startswith("acked ")]


def _drain(spool: SpoolLog[int]) -> list[int]:
    values: list[int] = []
    while paths := spool.waiting(64):
        for path in paths:
            values.extend(spool.read(path))
        spool.remove_many(paths)
    spool.close()
    return values


@pytest.mark.reliability("no-acknowledged-span-lost")
@pytest.mark.parametrize("point", ["unsynced", "torn"])
@pytest.mark.parametrize("threads", [1, 4])
def test_a_kill_during_an_append_keeps_every_acknowledged_batch_once(tmp_path: Path, point: str, threads: int) -> None:
    """kill -9 during a spool log append (record written, not synced; or torn): acknowledged batches come back once."""
    acked = _run_child(tmp_path, point, after=40, threads=threads)
    assert len(acked) >= 40
    reopened: SpoolLog[int] = SpoolLog(tmp_path, 1 << 30)
    values = _drain(reopened)
    reopened = SpoolLog(tmp_path, 1 << 30)
    assert len(values) == len(set(values)), "a batch came back twice"
    assert set(acked) <= set(values), f"acknowledged batches lost: {sorted(set(acked) - set(values))[:10]}"
    for base in range(threads):  # each thread's batches in the order it wrote them
        own = [value for value in values if value // 100_000 == base]
        assert own == sorted(own)
    if threads == 1:  # at most the batch being written when the process died comes back unacknowledged
        assert len(values) - len(acked) <= 1
    reopened.append([-1])
    reopened.close()
    assert _drain(SpoolLog(tmp_path, 1 << 30)) == [-1]


def test_a_torn_tail_is_cut_on_recovery(tmp_path: Path) -> None:
    _run_child(tmp_path, "torn", after=5, threads=1)
    (segment,) = sorted(tmp_path.glob("*.log"))
    records, end = log_records.scan(segment)
    assert len(records) >= 5 and segment.stat().st_size > end  # half a record (and the preallocated tail) follow
    SpoolLog(tmp_path, 1 << 30).close()
    assert segment.stat().st_size == end
