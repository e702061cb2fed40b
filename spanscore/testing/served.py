"""A real ``spanscore serve`` process for tests and scripts: started in a directory, ready once its banner ends.

The client package's tests and the dashboard screenshot script both need the service as a user starts it,
not an in-process stand-in; this starts it, waits for the banner's last part (every listener is up), and
keeps reading its output so the process never blocks on a full pipe.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def spanscore_serve(directory: Path, environ: Mapping[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """``spanscore serve ARGS`` in ``directory`` until the block ends, then SIGTERM; it must exit 0."""
    command = [sys.executable, "-m", "spanscore.cli.commands", "serve", *args]
    process = subprocess.Popen(
        command, cwd=directory, env=dict(environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_for_banner(process)
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    if code != 0:
        raise RuntimeError(f"spanscore serve exited {code}")


def _wait_for_banner(process: subprocess.Popen[str], seconds: float = 90) -> None:
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(("    rule ", "    rules:")):
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return
    process.kill()
    raise RuntimeError("spanscore serve did not start:\n" + "".join(seen))
