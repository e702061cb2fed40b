"""Every HTTP API answers an error the way ``server/wire.py`` says, with the error's own Retry-After."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from spanscore.errors import ConfigError, RetryableError
from spanscore.server.auth import TokenCheck
from spanscore.server.scores_api import ScoresApi


class _Taker:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def add_scores(self, document: Any) -> dict[str, Any]:
        raise self.error


async def _post(error: BaseException, *, bind_host: str = "127.0.0.1", **request: Any) -> aiohttp.ClientResponse:
    app = web.Application()
    ScoresApi(_Taker(error), TokenCheck([]), bind_host).add_routes(app)
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as session:
        request.setdefault("json", [])
        async with session.post(server.make_url("/api/v1/scores"), **request) as response:
            await response.read()
            return response


@pytest.mark.parametrize(("retry_after", "header"), [(7.2, "8"), (0.1, "1"), (30.0, "30")])
async def test_backpressure_carries_the_errors_own_retry_after(retry_after: float, header: str) -> None:
    response = await _post(RetryableError("storage is busy", retry_after=retry_after))
    assert (response.status, response.headers.get("Retry-After")) == (503, header)


async def test_a_config_error_is_the_callers_400_not_a_500() -> None:
    response = await _post(ConfigError("rules[0].name: required"))
    assert response.status == 400 and "Retry-After" not in response.headers


@pytest.mark.parametrize(
    ("request_args", "bind_host", "status", "words"),
    [
        ({"data": b"[]", "headers": {"Content-Type": "text/plain"}}, "127.0.0.1", 415, "send application/json"),
        ({"data": b"[", "headers": {"Content-Type": "application/json"}}, "127.0.0.1", 400, "not valid JSON"),
        ({}, "0.0.0.0", 403, "needs api.auth_tokens"),
    ],
)
async def test_refusals_answer_with_the_status_and_a_message(
    request_args: dict[str, Any], bind_host: str, status: int, words: str
) -> None:
    app = web.Application()
    ScoresApi(_Taker(AssertionError("not reached")), TokenCheck([]), bind_host).add_routes(app)
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as session:
        if "data" not in request_args:
            request_args = {"json": []}
        async with session.post(server.make_url("/api/v1/scores"), **request_args) as response:
            body = await response.json()
    assert response.status == status and words in body["error"]
