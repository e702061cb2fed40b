"""A TCP relay on loopback that a test can cut like a network partition, for a replica's Keeper connection.

Closing a socket is not a partition: the client sees the close at once and knows it is cut. A partition is
silence, so ``cut()`` keeps every connection open and swallows what either side sends (new connections are
accepted and swallowed too). ``heal()`` closes what was swallowed into, so both sides start clean.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class PartitionProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._cut = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="partition-proxy").start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut(self) -> None:
        """From now on nothing passes either way, and nobody is told."""
        self._cut.set()

    def heal(self) -> None:
        """Traffic passes again; connections that lost bytes while cut are closed (a fresh start for both)."""
        self._drop_all()
        self._cut.clear()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        self._drop_all()

    def _drop_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            if self._cut.is_set():
                continue  # swallowed: the partition
            try:
                target.sendall(data)
            except OSError:
                break
        for sock in (source, target):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
