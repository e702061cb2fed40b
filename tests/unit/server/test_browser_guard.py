"""The Host / Origin / Sec-Fetch-Site guard on a real aiohttp server on loopback, and its config key.

The app behind the guard answers 200 to anything, so every status other than 200 is the guard's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from spanscore.config import load_config
from spanscore.errors import ConfigError
from spanscore.server.origin import BrowserGuard, is_loopback


@pytest.fixture
async def guarded() -> AsyncIterator[str]:
    async def anything(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    guard = BrowserGuard(["spanscore.internal", "10.1.2.3"], bind_host="127.0.0.1")
    app = web.Application(middlewares=[guard.middleware])
    app.router.add_route("*", "/{tail:.*}", anything)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def send(address: str, headers: dict[str, str], path: str = "/api/v1/query") -> tuple[int, dict[str, str]]:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://{address}{path}", json={"sql": "SELECT 1"}, headers=headers) as response:
            return response.status, await response.json()


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST.", "[::1]:{port}", "[::1]", "spanscore.internal:{port}",
     "10.1.2.3", "192.0.2.7:{port}", "[2001:db8::1]:{port}"],
)  # fmt: skip
async def test_loopback_ip_literal_and_configured_hosts_are_answered(guarded: str, host: str) -> None:
    port = guarded.rsplit(":", 1)[1]
    status, body = await send(guarded, {"Host": host.format(port=port)})
    assert status == 200, body


@pytest.mark.parametrize(
    "host", ["attacker.example:{port}", "attacker.example", "localhost.attacker.example", "spanscore.internal.evil"]
)
async def test_any_other_host_name_is_refused_as_dns_rebinding(guarded: str, host: str) -> None:
    port = guarded.rsplit(":", 1)[1]
    for path in ("/api/v1/query", "/metrics", "/healthz", "/dashboard/", "/api/v1/dashboard/scorers"):
        status, body = await send(guarded, {"Host": host.format(port=port)}, path)
        assert status == 421, (path, body)
        assert "Host" in body["error"] and "api.allowed_hosts" in body["error"], body
        assert host.format(port=port).split(":")[0] in body["error"], body


async def test_a_matching_origin_is_answered_and_any_other_refused(guarded: str) -> None:
    port = guarded.rsplit(":", 1)[1]
    for origin in (f"http://127.0.0.1:{port}", f"https://127.0.0.1:{port}"):
        status, body = await send(guarded, {"Origin": origin})
        assert status == 200, (origin, body)
    for origin in (f"http://localhost:{port}", "http://127.0.0.1:8888", "http://127.0.0.1", "null",
                   "http://attacker.example", f"ftp://127.0.0.1:{port}", "garbage"):  # fmt: skip
        status, body = await send(guarded, {"Origin": origin})
        assert status == 403, (origin, body)
        assert "Origin" in body["error"] and "api.allowed_hosts" in body["error"]


async def test_cross_site_and_same_site_fetches_are_refused_on_every_path(guarded: str) -> None:
    for site in ("cross-site", "same-site", "Cross-Site"):
        for path in ("/api/v1/query", "/api/v1/backfill", "/metrics", "/api/v1/dashboard/worst", "/dashboard/"):
            status, body = await send(guarded, {"Sec-Fetch-Site": site}, path)
            assert status == 403 and "Sec-Fetch-Site" in body["error"], (site, path, body)
    for site in ("same-origin", "none"):
        status, _ = await send(guarded, {"Sec-Fetch-Site": site})
        assert status == 200


async def test_only_a_top_level_navigation_to_a_dashboard_page_may_come_from_another_site(guarded: str) -> None:
    navigate = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://{guarded}/dashboard/", headers=navigate) as response:
            assert response.status == 200
        for path in ("/api/v1/dashboard/scorers", "/api/v1/query", "/metrics"):
            async with session.get(f"http://{guarded}{path}", headers=navigate) as response:
                assert response.status == 403, path
        async with session.get(f"http://{guarded}/dashboard/", headers=navigate | {"Sec-Fetch-Dest": "iframe"}) as r:
            assert r.status == 403


def test_allowed_hosts_are_validated_and_normalised() -> None:
    config = load_config(None, environ={"SPANSCORE_API__ALLOWED_HOSTS": "[Spanscore.Internal., '[::1]', '*']"})
    assert config.api.allowed_hosts == ["spanscore.internal", "::1", "*"]
    with pytest.raises(ConfigError) as caught:
        load_config(None, environ={"SPANSCORE_API__ALLOWED_HOSTS": "[ok.example, 'http://x.example', 'a.b:80']"})
    message = str(caught.value)
    assert "api.allowed_hosts" in message and "'http://x.example'" in message and "'a.b:80'" in message
    assert "ok.example" not in message


async def test_a_star_in_allowed_hosts_answers_any_host() -> None:
    guard = BrowserGuard(["*"])
    assert guard.allows_host("anything.example:1234") and not BrowserGuard([]).allows_host("anything.example")


def test_loopback_bind_addresses_are_told_from_the_rest() -> None:
    assert all(is_loopback(host) for host in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(host) for host in ("0.0.0.0", "::", "", "10.0.0.5", "spanscore.internal"))
