"""Appends to a spool log and SIGKILLs itself at one point of an append, for ``test_spool_log_kill``.

``python -m tests.e2e.spool_log_kill_child DIR POINT AFTER THREADS``: THREADS threads append one-value
batches and print ``acked V`` once each append returned (the acknowledgement). After AFTER acknowledgements
the next append dies at POINT: ``unsynced`` (its record written, the kill instead of the fdatasync) or
``torn`` (half of its record written).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from spanscore.storage.write import log_segments
from spanscore.storage.write.spool_log import SpoolLog

_print = threading.Lock()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(point: str) -> None:
    real_pwrite = os.pwrite

    def torn(fd: int, buffers: Any, offset: int) -> int:
        record = b"".join(buffers)
        real_pwrite(fd, record[: len(record) // 2], offset)
        _die()
        return 0

    if point == "torn":
        log_segments.os.pwritev = torn  # type: ignore[assignment]
    else:
        log_segments.os.fdatasync = lambda fd: _die()  # type: ignore[assignment]


def main(directory: Path, point: str, after: int, threads: int) -> None:
    spool: SpoolLog[int] = SpoolLog(directory, 1 << 30)
    acked = 0

    def append(base: int) -> None:
        nonlocal acked
        for index in range(10_000):
            value = base + index
            spool.append([value])
            with _print:
                print(f"acked {value}", flush=True)
                acked += 1
                if acked == after:
                    _arm(point)

    workers = [threading.Thread(target=append, args=(100_000 * n,), daemon=True) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    print("not killed", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
