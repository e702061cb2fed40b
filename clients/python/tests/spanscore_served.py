"""A real ``spanscore serve`` on loopback for the client's tests, with an API token and a short quiet period.

The service is the one thing the client talks to, so the tests use the real one: a process started the way
a user starts it (``spanscore.testing.served``), on ports picked by ``spanscore.testing.ports``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spanscore.testing.ports import free_port
from spanscore.testing.served import spanscore_serve as serve

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
    with serve(directory, environ):
        yield Served(f"http://127.0.0.1:{api}", f"http://127.0.0.1:{http}", directory)
