"""Issue #37, item 14: every API body limit holds exactly, against a real `spanscore serve`.

A valid body sent in several pieces (as any client sending more than a socket buffer does) must be read
whole: a body just under its endpoint's limit is taken, one byte over is 413 naming the limit. Before, the
rules and scores endpoints read only what was buffered first, so a valid body over about 128 kB was
"not valid JSON" and the documented 1 MB and 4 MB limits did not hold.
"""

from __future__ import annotations

import http.client
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_process import _free_port, _start

MIB = 1 << 20
TRACE_ID = "5b8efff798038103d269b633813fc60c"


@pytest.fixture(scope="module")
def api_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("body-limits")
    port = _free_port()
    config = root / "spanscore.yaml"
    config.write_text(
        f"collector:\n  grpc: {{port: {_free_port()}}}\n  http: {{port: {_free_port()}}}\n"
        f"api: {{port: {port}}}\nrules:\n  - name: quality\n    scorers: [completeness]\n",
        encoding="utf-8",
    )
    process = _start(Path(config))
    try:
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _padded(document: Any, size: int) -> bytes:
    """``document`` as JSON followed by spaces up to exactly ``size`` bytes: still one valid JSON value."""
    text = json.dumps(document).encode()
    assert len(text) < size
    return text + b" " * (size - len(text))


def _send_in_pieces(port: int, method: str, path: str, body: bytes, kind: str = "application/json") -> tuple[int, Any]:
    """Send ``body`` in 64 KiB pieces with pauses between them, chunked (no Content-Length), as a slow client does.

    Without a Content-Length, the only way to learn the size is to read the body, which the limit must do too.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest(method, path)
        connection.putheader("Content-Type", kind)
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        for start in range(0, len(body), 64 << 10):
            piece = body[start : start + (64 << 10)]
            connection.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            if start < 4 * (64 << 10):
                time.sleep(0.02)  # the first pieces arrive apart, so the server sees them one by one
        connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    except (BrokenPipeError, ConnectionResetError):
        response = connection.getresponse()  # the server answered early (413) and closed; read what it said
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        connection.close()


ENDPOINTS = [
    ("PUT", "/api/v1/rules", {"rules": [{"name": "quality", "scorers": ["completeness"]}]}, MIB),
    ("POST", "/api/v1/scores", {"trace_id": TRACE_ID, "name": "helpfulness", "label": "up"}, 4 * MIB),
    ("POST", "/api/v1/query", {"sql": "SELECT 1", "format": "json"}, MIB),
    ("POST", "/api/v1/rules/preview", {"rule": "quality", "since": "1h"}, MIB),
    ("POST", "/api/v1/deadletter/replay", {}, MIB),
]


@pytest.mark.reliability("bad-input-clear-error")
@pytest.mark.parametrize(("method", "path", "document", "limit"), ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
def test_a_body_just_under_the_limit_is_read_whole_and_one_byte_over_is_413(
    api_port: int, method: str, path: str, document: Any, limit: int
) -> None:
    status, answer = _send_in_pieces(api_port, method, path, _padded(document, limit))
    assert status == 200, (status, answer)
    status, answer = _send_in_pieces(api_port, method, path, _padded(document, limit + 1))
    assert status == 413, (status, answer)
    assert str(limit) in answer["error"], answer


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(api_port: int) -> None:
    """A Content-Length over the limit is refused from the header alone, naming the limit."""
    connection = http.client.HTTPConnection("127.0.0.1", api_port, timeout=60)
    try:
        connection.putrequest("PUT", "/api/v1/rules")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(MIB + 1))
        connection.endheaders()
        connection.send(b"{")
        response = connection.getresponse()
        assert response.status == 413
        assert str(MIB) in json.loads(response.read())["error"]
    finally:
        connection.close()
