"""Keeps browsers from being turned against the HTTP listeners: Host, Origin and Sec-Fetch-Site checks.

The Host rule (``HostCheck``) guards the API and the OTLP/HTTP receiver alike; the Origin rules guard the API.
A browser cannot speak OTLP/gRPC (HTTP/2 with trailers), so the gRPC receiver needs neither.

A token-less API on loopback is safe from other machines, but not from the browser on the same one:
a page on any site can make the browser send requests to ``127.0.0.1`` (cross-site requests), and a
name the attacker controls can be re-pointed at ``127.0.0.1`` after the page loaded (DNS rebinding),
which makes the browser treat the API as the attacker's own origin. This middleware closes both, on
every path of the listener, before any handler or token check runs:

- **Host.** Only requests whose ``Host`` names this service are answered (421 otherwise): the loopback
  names, any IP literal (a literal address cannot be re-pointed, so rebinding always arrives with a
  DNS name), the listener's own bind address, and the names in ``api.allowed_hosts``. ``*`` there
  turns the check off, for a proxy that rewrites Host in front of a token-protected API.
- **Origin / Sec-Fetch-Site.** A browser request from another origin is refused (403): an ``Origin``
  that is not the request's own scheme-less ``host:port``, or ``Sec-Fetch-Site: cross-site`` /
  ``same-site`` (another port on localhost is the same site but another origin). Requests without
  these headers come from programs (curl, ``spanscore query``, Prometheus), which a page cannot
  impersonate. The one exception is a top-level navigation to a dashboard page (a link someone
  clicked): the page holds no data, and the requests it then makes are same-origin.

Refusals are JSON ``{"error": ...}`` naming the header and what to change.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from aiohttp import web

from spanscore.server.listeners_config import ANY_HOST, check_allowed_host, is_ip_literal

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""Names a loopback API is reached by without any configuration."""
DASHBOARD_PAGES = frozenset({"/dashboard", "/dashboard/", "/dashboard/run"})
"""Pages a link from elsewhere may open (top-level navigations only); they carry no data."""
_SHOWN = 120  # a refused header is quoted in the error up to this many characters

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_name(host: str) -> str:
    """The name part of a ``Host`` header value: port dropped, IPv6 brackets removed, lower case, no final dot."""
    host = host.strip().lower()
    if host.startswith("["):
        inside, _, _ = host[1:].partition("]")
        return inside
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


class HostCheck:
    """The Host rule above, shared by every HTTP listener (the API and the OTLP/HTTP receiver).

    ``setting`` names the configuration key that lists more names, so a refusal says what to change.
    """

    def __init__(self, allowed_hosts: Iterable[str], bind_host: str = "", setting: str = "api.allowed_hosts") -> None:
        names = {check_allowed_host(entry) for entry in allowed_hosts}
        self._any_host = ANY_HOST in names
        self._names = frozenset(names | LOOPBACK_NAMES | ({host_name(bind_host)} if bind_host else set()))
        self.setting = setting

    def allows(self, host: str | None) -> bool:
        if self._any_host:
            return True
        if not host:
            return False
        name = host_name(host)
        return name in self._names or is_ip_literal(name)

    def refusal_message(self, host: str | None) -> str | None:
        """Why ``host`` is refused (421), or None when the listener answers to it."""
        if self.allows(host):
            return None
        shown = "no Host header" if not host else f"Host {_quote(host)}"
        return (
            f"{shown} is not a name this listener answers to (a guard against DNS rebinding); "
            f"if clients reach the service by this name, add it to {self.setting}"
        )


class BrowserGuard:
    """The Host and cross-origin rules above; ``middleware`` goes into the application's middlewares."""

    def __init__(self, allowed_hosts: Iterable[str], bind_host: str = "") -> None:
        self._hosts = HostCheck(allowed_hosts, bind_host, "api.allowed_hosts")

    def allows_host(self, host: str | None) -> bool:
        return self._hosts.allows(host)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = self.refusal(request)
        if refusal is not None:
            return refusal
        return await handler(request)

    def refusal(self, request: web.Request) -> web.Response | None:
        """The answer that refuses ``request``, or None when it may go on."""
        host = request.headers.get("Host")
        message = self._hosts.refusal_message(host)
        if message is not None:
            return _refuse(421, message)
        if _is_page_navigation(request):
            return None
        origin = request.headers.get("Origin")
        if origin is not None and not _same_origin(origin, host or ""):
            return _refuse(
                403,
                f"cross-origin request refused: Origin {_quote(origin)} is not this API ({_quote(host or '')}); "
                "browsers may call the API only from its own dashboard, and programs should send no Origin header "
                "(api.allowed_hosts lists the names the API answers to)",
            )
        site = request.headers.get("Sec-Fetch-Site", "").lower()
        if site in ("cross-site", "same-site"):
            return _refuse(
                403,
                f"cross-origin request refused: Sec-Fetch-Site is {site!r}; browsers may call the API only from its "
                "own dashboard (api.allowed_hosts lists the names the API answers to)",
            )
        return None


def is_loopback(bind_host: str) -> bool:
    """True for a bind address only this machine can reach (``localhost``, 127.0.0.0/8, ``::1``)."""
    name = host_name(bind_host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_page_navigation(request: web.Request) -> bool:
    headers = request.headers
    return (
        request.method == "GET"
        and request.path in DASHBOARD_PAGES
        and headers.get("Sec-Fetch-Mode") == "navigate"
        and headers.get("Sec-Fetch-Dest") == "document"
    )


def _same_origin(origin: str, host: str) -> bool:
    """True when ``origin`` (scheme://host[:port]) names the same host and port the request was sent to."""
    if origin == "null":
        return False
    try:
        parts = urlsplit(origin)
        origin_port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    default_port = 443 if parts.scheme == "https" else 80
    request_name = host_name(host)
    _, has_port, port_text = host.strip().rpartition("]")[2].rpartition(":")
    request_port = int(port_text) if has_port and port_text.isdigit() else default_port
    return parts.hostname.rstrip(".") == request_name and (origin_port or default_port) == request_port


def _quote(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")


def _refuse(status: int, message: str) -> web.Response:
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    return web.json_response({"error": message}, status=status, headers=headers)
