"""A failed judge call's cause in plain words, for logs, stored errors, ``spanscore status`` and the dashboard.

litellm wraps the transport's exception two or three times and keeps the innermost text, which for a refused
connection reads ``Cannot connect to host 127.0.0.1:9 ssl:<ssl.SSLContext object at 0x7f...> [Connect call
failed ...]``: an object's repr that changes with every process and says nothing to an operator. The chain
of ``__cause__`` / ``__context__`` still holds the real error (``ConnectionRefusedError``, a DNS failure, a
timeout), so the cause is read from there first, and the provider's own message only for HTTP answers.

Each cause starts with what kind of trouble it is (``unreachable``, ``timing out``, ``rate limited``,
``failing``), so a reader can tell an outage from a slow or busy judge without knowing litellm's exceptions.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
from collections.abc import Iterator

_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?")
_MAX = 240


def plain_cause(error: BaseException) -> str:
    """What went wrong with one judge call, e.g. ``unreachable: connection refused to 127.0.0.1:9``."""
    chain = list(_chain(error))
    address = _address(chain)
    for link in chain:
        found = _network_cause(link, address)
        if found:
            return found
    status = next((s for link in chain if isinstance(s := getattr(link, "status_code", None), int)), None)
    text = scrub(str(error))
    if status == 429:
        return f"rate limited: HTTP 429: {text}"[:_MAX]
    if status is not None and status >= 500:
        return f"failing: HTTP {status}: {text}"[:_MAX]
    if status is not None:
        return f"HTTP {status}: {text}"[:_MAX]
    return f"{type(error).__name__}: {text}"[:_MAX] if text else type(error).__name__


def scrub(text: str) -> str:
    """``text`` on one line, without litellm's repeated type prefixes or object reprs."""
    text = _REPR.sub("", text.replace("\n", " "))
    text = _LITELLM_PREFIX.sub("", text.strip(), count=1)
    return re.sub(r"\s{2,}", " ", text).strip()[:_MAX]


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen and len(seen) < 12:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _address(chain: list[BaseException]) -> str:
    """``host:port`` the call went to, when an exception in the chain names it (aiohttp's connector errors)."""
    for link in chain:
        host, port = getattr(link, "host", None), getattr(link, "port", None)
        if isinstance(host, str) and host and isinstance(port, int):
            return f"{host}:{port}"
    for link in chain:
        match = re.search(r"\('([^']+)', (\d+)\)", str(link))  # "Connect call failed ('127.0.0.1', 9)"
        if match:
            return f"{match[1]}:{match[2]}"
    return ""


def _network_cause(link: BaseException, address: str) -> str:
    where = f" {address}" if address else ""
    if isinstance(link, ConnectionRefusedError) or getattr(link, "errno", None) == errno.ECONNREFUSED:
        return f"unreachable: connection refused to{where or ' the judge'}"
    if isinstance(link, socket.gaierror):
        host = address.rsplit(":", 1)[0] if address else "the judge's host"
        return f"unreachable: cannot resolve {host} ({link.strerror or link})"
    if isinstance(link, ssl.SSLError):
        return f"unreachable: TLS with{where or ' the judge'} failed: {link.reason or link}"
    if isinstance(link, ConnectionResetError):
        return f"unreachable: connection reset by{where or ' the judge'}"
    if isinstance(link, TimeoutError) or type(link).__name__ in ("Timeout", "ReadTimeout", "ConnectTimeout"):
        return f"timing out: no answer from{where or ' the judge'} in time"
    if isinstance(link, OSError) and link.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT):
        return f"unreachable: {link.strerror or 'no route'} to{where or ' the judge'}"
    return ""
