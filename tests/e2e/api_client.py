"""The e2e tests' one JSON client for a served API: an unexpected status fails with the answer's body.

A bare ``urllib`` call raises ``HTTPError: HTTP Error 400: Bad Request`` and drops the body, which is
where the service says why (a query limit, a refusal, a retry hint). Every e2e helper that talks HTTP
to the API goes through here, so a failure in CI names its cause.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any


class ApiError(AssertionError):
    """An API answer with a status the test did not expect; the message carries the body."""

    def __init__(self, method: str, url: str, status: int, body: str) -> None:
        super().__init__(f"{method} {url} answered {status}: {body[:2000]}")
        self.status = status
        self.body = body


def api_call(
    port: int,
    path: str,
    payload: Any = None,
    *,
    method: str | None = None,
    timeout: float = 60.0,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """``(status, decoded JSON body)`` of one call; an error status is returned, not raised.

    ``payload`` is sent as JSON; ``raw`` sends bytes as they are, with ``content_type``.
    """
    data = raw if raw is not None else json.dumps(payload).encode() if payload is not None else None
    url = f"http://127.0.0.1:{port}{path}"
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        status = exc.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def api_json(
    port: int,
    path: str,
    payload: Any = None,
    *,
    method: str | None = None,
    timeout: float = 60.0,
    busy_wait_s: float = 0.0,
) -> Any:
    """The decoded body of a call that must answer 200; anything else raises ``ApiError`` with the body.

    With ``busy_wait_s``, a 503 (the service says it is busy, with a retry hint) is asked again after
    its hint, as a real client would, for at most that long.
    """
    deadline = time.monotonic() + busy_wait_s
    status, body = api_call(port, path, payload, method=method, timeout=timeout)
    while status == 503 and time.monotonic() < deadline:
        time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))
        status, body = api_call(port, path, payload, method=method, timeout=timeout)
    if status != 200:
        shown = body if isinstance(body, str) else json.dumps(body)
        raise ApiError(method or ("POST" if payload is not None else "GET"), path, status, shown)
    return body
