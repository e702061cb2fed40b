"""A DSN that says TLS gets TLS, whatever its port.

clickhouse-connect chooses TLS from the port (443, 8443) and not from the DSN's scheme: an
``https://user:password@host:9443/`` DSN sent its first request, credentials included, as plain HTTP.
A loopback listener that records the first bytes a connection sends tells which it was: a TLS
handshake record starts with 0x16 0x03, plain HTTP with the method.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from clickhouse_connect.driver.exceptions import ClickHouseError

from spanscore.storage.connection import connect


@pytest.fixture
def first_bytes() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback port that records the first bytes of each connection and closes it (retries fail fast too)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                peer, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with peer:
                peer.settimeout(5)
                try:
                    seen.append(peer.recv(8))
                except OSError:
                    seen.append(b"")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()


def _first_request(dsn: str, seen: list[bytes]) -> bytes:
    with pytest.raises(ClickHouseError):
        connect(dsn, "spanscore")
    assert seen, "the client never connected"
    return seen[0]


@pytest.mark.parametrize("scheme", ["https", "clickhouses"])
def test_a_tls_scheme_on_any_port_starts_with_a_tls_handshake(
    first_bytes: tuple[int, list[bytes]], scheme: str
) -> None:
    port, seen = first_bytes
    assert _first_request(f"{scheme}://owner:secret@127.0.0.1:{port}/", seen)[:2] == b"\x16\x03"


def test_a_plain_scheme_stays_plain_http(first_bytes: tuple[int, list[bytes]]) -> None:
    port, seen = first_bytes
    assert _first_request(f"clickhouse://owner:secret@127.0.0.1:{port}/", seen).startswith(b"POST")
