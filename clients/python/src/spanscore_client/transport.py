"""HTTP with the standard library: one request, its JSON answer, or a ``SpanscoreError`` with the service's words.

urllib rather than httpx: the client must install with nothing beside it, and a feedback call is one small
request, where a connection pool buys nothing.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from spanscore_client.errors import SpanscoreError


class Transport:
    """Where the API is, its bearer token and the time limit of one call."""

    def __init__(self, base_url: str, token: str | None, timeout: float) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url {base_url!r} must be http://host:port or https://host:port (the API's address)")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._timeout = timeout

    def json(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        """The decoded JSON answer of ``method path``; ``body`` (if any) is sent as JSON."""
        raw = self.raw(method, path, body, params)
        try:
            return json.loads(raw)
        except ValueError:
            raise SpanscoreError(0, f"{method} {path}: the answer is not JSON: {raw[:200]!r}") from None

    def raw(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> bytes:
        """The answer's body as bytes; any status other than 2xx raises ``SpanscoreError`` with its message."""
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"  # the API takes JSON bodies only
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as exc:
            raise _refusal(exc) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SpanscoreError(0, f"{method} {url}: no answer from the service ({reason})") from None


def _refusal(exc: urllib.error.HTTPError) -> SpanscoreError:
    """The service's ``{"error": ..., "problems": [...]}`` as an exception; any other body as text."""
    raw = exc.read()
    retry_after = _seconds(exc.headers.get("Retry-After"))
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        problems = body.get("problems")
        listed = [str(problem) for problem in problems] if isinstance(problems, list) else []
        return SpanscoreError(exc.code, body["error"], listed, retry_after)
    text = raw.decode("utf-8", "replace").strip() or str(exc.reason)
    return SpanscoreError(exc.code, text[:500], retry_after=retry_after)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
