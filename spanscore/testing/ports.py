"""Ports for listeners a test (or a benchmark) picks before it starts the process that binds them.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from the ephemeral range, the same range
every outgoing connection takes its local port from. Between the pick and the bind, any client on the
machine (a Keeper client retrying, a gRPC channel, another worker's test) could take it, and the service then
fails to start with "address already in use". So the pick comes from below the ephemeral range, where
outgoing connections never land, at random, and is checked free by binding it once.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    """A loopback port that is free now and outside the range outgoing connections take theirs from."""
    high = _ephemeral_start() - 1
    if high <= _LOWEST:  # an unusual kernel setting: fall back to the kernel's pick
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    chooser = random.SystemRandom()
    for _ in range(200):
        port = chooser.randint(_LOWEST, high)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port between {_LOWEST} and {high} after 200 tries")
