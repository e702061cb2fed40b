"""A real ``spanscore serve`` on loopback for the client's tests, with an API token and a short quiet period.

The service is the one thing the client talks to, so the tests use the real one: a process started the way
a user starts it, on ports picked by ``spanscore.testing.ports`` (below the ephemeral range).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spanscore.testing.ports import free_port

TOKEN = "client-test-token"


@dataclass(frozen=True)
class Served:
    api_url: str
    otlp_http_url: str
    directory: Path


@contextmanager
def spanscore_serve(directory: Path) -> Iterator[Served]:
    """The service until the block ends, then SIGTERM; it must exit 0."""
    http, api = free_port(), free_port()
    environ = {
        **{key: value for key, value in os.environ.items() if not key.startswith(("SPANSCORE_", "OTEL_"))},
        "SPANSCORE_COLLECTOR__GRPC__ENABLED": "false",
        "SPANSCORE_COLLECTOR__HTTP__PORT": str(http),
        "SPANSCORE_API__PORT": str(api),
        "SPANSCORE_API__AUTH_TOKENS": json.dumps([TOKEN]),
        "SPANSCORE_COLLECTOR__RUNS__QUIET_PERIOD_S": "0.3",
    }
    command = [sys.executable, "-m", "spanscore.cli.commands", "serve"]
    process = subprocess.Popen(
        command, cwd=directory, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_for_banner(process)
        yield Served(f"http://127.0.0.1:{api}", f"http://127.0.0.1:{http}", directory)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    assert code == 0, f"spanscore serve exited {code}"


def _wait_for_banner(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(("    rule ", "    rules:")):
            # The banner's last part: every listener is up. Keep reading, so the service never blocks on a full pipe.
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return
    process.kill()
    raise AssertionError("spanscore serve did not start:\n" + "".join(seen))
