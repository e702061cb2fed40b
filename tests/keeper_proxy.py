"""A loopback TCP proxy in front of ZooKeeper that a test can cut, to partition one replica from Keeper.

``cut()`` is a partition, not a refusal: bytes in both directions are dropped and sockets stay open, so the
client notices only when its pings go unanswered (as across a broken network). ``heal()`` closes what was
held, and new connections pass again.
"""

from __future__ import annotations

import socket
import threading

from tests.ports import free_port


class KeeperProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._cut = False
        self._closed = False
        threading.Thread(target=self._accept, name="keeper-proxy", daemon=True).start()

    def cut(self) -> None:
        self._cut = True

    def heal(self) -> None:
        with self._lock:
            held, self._open = self._open, []
            self._cut = False
        for sock in held:
            _close(sock)

    def close(self) -> None:
        self._closed = True
        self.heal()
        _close(self._listener)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if not self._cut:
                    sink.sendall(data)
        except OSError:
            pass
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
