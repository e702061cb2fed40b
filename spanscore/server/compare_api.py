"""``POST /api/v1/compare``: versions of the agent compared on the stored scores (docs/compare.md).

The body is JSON: ``{"by": "service.version", "baseline": "1.4.0", "since": "24h", "confidence": 0.95,
"min_effect": 0.05, "scorers": [...]}`` (only ``baseline`` is required). The answer is the document
``spanscore report compare --format json`` prints. A bad field answers 400 naming every problem.
``POST /api/v1/compare/details`` takes the same body and answers the page's chart and worst runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from spanscore.alerting.version_report import CompareRequest, compare_details, compare_store
from spanscore.errors import RequestShapeError
from spanscore.server.auth import TokenCheck
from spanscore.server.bodies import json_body, read_limited
from spanscore.server.client_gone import while_connected
from spanscore.server.dashboard import PAGE_HEADERS, load_assets
from spanscore.server.wire import json_error
from spanscore.storage.reads.compare import Reads

MAX_BODY_BYTES = 64 << 10
Work = Callable[[Reads, CompareRequest], Awaitable[dict[str, Any]]]


class CompareApi:
    def __init__(self, store: Reads, tokens: TokenCheck) -> None:
        self._store = store
        self._tokens = tokens
        self._pages = load_assets()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/api/v1/compare", self._post)
        app.router.add_post("/api/v1/compare/details", self._details)
        app.router.add_get("/dashboard/compare", self._page)

    async def _page(self, request: web.Request) -> web.Response:
        """The dashboard's compare page (static/compare.html): it asks this API, with the form in its address."""
        body, content_type = self._pages["compare.html"]
        return web.Response(body=body, content_type=content_type, charset="utf-8", headers=PAGE_HEADERS)

    async def _post(self, request: web.Request) -> web.Response:
        return await self._answer(request, compare_store)

    async def _details(self, request: web.Request) -> web.Response:
        """The compare page's chart and worst runs for the same body (``compare_details``)."""
        return await self._answer(request, compare_details)

    async def _answer(self, request: web.Request, work: Work) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            if request.content_type != "application/json":
                message = f"Content-Type {request.content_type!r} is not accepted: send application/json"
                raise RequestShapeError(message, 415)
            body = json_body(await read_limited(request, MAX_BODY_BYTES, "the body"), "body")
            if not isinstance(body, dict):
                raise RequestShapeError('the body must be a JSON object, e.g. {"baseline": "1.4.0"}', 400)
            document = await while_connected(request, work(self._store, CompareRequest.from_body(body)))
        except Exception as exc:
            return json_error(exc)
        return web.json_response(document)
