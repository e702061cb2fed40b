"""A TCP relay between one replica and ZooKeeper that can be cut and healed.

A cut is a black hole, not a refusal: bytes are read and dropped in both directions, and new connections
are accepted but never joined to ZooKeeper, so the replica sees silence (as in a network partition) rather
than a reset. Healing closes every connection that lived through the cut (its byte stream has a hole) so
the client reconnects afresh.
"""

from __future__ import annotations

import socket
import threading


class Relay:
    """Listen on a free loopback port and forward to `target_port`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.cut = False
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = None
            if not self.cut:
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                    upstream.settimeout(None)
                except OSError:
                    client.close()
                    continue
            with self._lock:
                self._conns += [client] + ([upstream] if upstream else [])
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            if upstream is not None:
                threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket | None) -> None:
        """Copy src to dst; while cut (or with no upstream), drop what is read."""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                break
            if not data:
                break
            if self.cut or dst is None:
                continue
            try:
                dst.sendall(data)
            except OSError:
                break
        for s in (src, dst):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass

    def set_cut(self) -> None:
        self.cut = True

    def heal(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.cut = False

    def stop(self) -> None:
        self._stopped = True
        self._listener.close()
        self.heal()
