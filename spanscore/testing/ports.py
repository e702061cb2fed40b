"""Ports for listeners a test (or a benchmark) picks before it starts the process that binds them.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from the ephemeral range, the same range
every outgoing connection takes its local port from. Between the pick and the bind, any client on the
machine (a Keeper client retrying, a gRPC channel, another worker's test) could take it, and the service then
fails to start with "address already in use". So the pick comes from below the ephemeral range, where
outgoing connections never land, and is checked free by binding it once.

Two picks must also never agree before either is bound: a test that asks for three ports (gRPC, HTTP, API)
got the same one twice in a CI run, and the service's HTTP listener then found its API listener on it. So a
process never hands out the same port twice, and each pytest-xdist worker picks from its own slice of the
range, so two workers' tests cannot pick the same port either.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000
_given: set[int] = set()
_lock = threading.Lock()


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _worker_slice(low: int, high: int) -> tuple[int, int]:
    """The part of [low, high] for the xdist worker this runs in (all of it outside xdist): gw0 the first."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    try:
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        index = int(worker.removeprefix("gw")) if worker.startswith("gw") else 0
    except ValueError:
        return low, high
    if count <= 1 or not 0 <= index < count:
        return low, high
    width = (high - low + 1) // count
    return low + index * width, low + (index + 1) * width - 1


def free_port() -> int:
    """A loopback port free now, outside the ephemeral range, never handed out before by this process or worker."""
    high = _ephemeral_start() - 1
    if high - _LOWEST < 1_000:  # an unusual kernel setting: fall back to the kernel's pick
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    low, high = _worker_slice(_LOWEST, high)
    chooser = random.SystemRandom()
    with _lock:
        for _ in range(500):
            port = chooser.randint(low, high)
            if port in _given:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _given.add(port)
            return port
    raise RuntimeError(f"no free loopback port between {low} and {high} after 500 tries")
