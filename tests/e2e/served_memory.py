"""A real `spanscore serve` for cost tests: its ports, and the resident memory of it and its children.

The growth a hostile input causes is read from /proc by ``bench.rss_tree``: the sum of VmRSS over the service
and every process it started (the OTLP/JSON worker is one), sampled every 10 ms while the input is sent. Tests
hold it only to generous bounds that the unbounded code clearly broke; the exact figures come from bench/.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.rss_tree import Peak, peak_growth
from tests.e2e.test_process import _free_port, _start

TOKEN = "ingest-s3cret"


@dataclass
class Served:
    process_pid: int
    grpc_port: int
    http_port: int
    api_port: int

    def measure(self) -> AbstractContextManager[Peak]:
        """The peak growth of the service's process tree while the block runs."""
        return peak_growth(self.process_pid)


@contextmanager
def serve(root: Path, grpc_options: str = "", extra_yaml: str = "", http_options: str = "") -> Iterator[Served]:
    """`spanscore serve` with ingest tokens (``TOKEN``) on free loopback ports; stopped by SIGTERM at the end.

    ``grpc_options`` go into ``collector.grpc`` (``"max_concurrent_reads: 1"``), ``http_options`` into
    ``collector.http``, ``extra_yaml`` after the rest.
    """
    ports = {name: _free_port() for name in ("grpc", "http", "api")}
    grpc = ", ".join(part for part in (f"port: {ports['grpc']}", grpc_options) if part)
    http = ", ".join(part for part in (f"port: {ports['http']}", http_options) if part)
    config = root / "spanscore.yaml"
    config.write_text(
        f"collector:\n  auth_tokens: [{TOKEN}]\n  grpc: {{{grpc}}}\n  http: {{{http}}}\n"
        f"api: {{port: {ports['api']}}}\nstorage: {{acknowledge: stored}}\n{extra_yaml}",
        encoding="utf-8",
    )
    process = _start(config)
    try:
        yield Served(process.pid, ports["grpc"], ports["http"], ports["api"])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except Exception:
            process.kill()
            raise
