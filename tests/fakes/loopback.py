"""A threaded HTTP server on 127.0.0.1, port 0, as a context manager: the one lifecycle the fakes share."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackHTTPServer:
    """Serves ``handler`` from a daemon thread between ``__enter__`` and ``__exit__``; never leaves loopback."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], server: type[ThreadingHTTPServer] = ThreadingHTTPServer):
        self._server = server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
