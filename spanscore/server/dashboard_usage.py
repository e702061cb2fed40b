"""The dashboard's GenAI usage panel: ``GET /api/v1/dashboard/usage?since=24h&by=hour``.

Tokens and mean model-call latency per agent and model over the score charts' window and buckets, read from
the OTLP metrics roll-ups (``spanscore.storage.reads.genai_usage``). Apart from ``dashboard.py`` so that the
panel is one module: its route, its query parameters and its reader.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from spanscore.errors import PermanentError
from spanscore.server.auth import TokenCheck
from spanscore.server.dashboard import DATA_HEADERS, CoverageQuery, parse_query
from spanscore.server.wire import json_error
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.genai_usage import genai_usage


class UsageQuery(CoverageQuery):
    """``since`` and ``by`` (hour or day), as the coverage chart takes them; rule and target do not apply."""


class UsagePanel:
    def __init__(self, store: ClickHouseStore, tokens: TokenCheck) -> None:
        self._store = store
        self._tokens = tokens

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/dashboard/usage", self._usage)

    async def _usage(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            query = parse_query(UsageQuery, request)
            if query.rule or query.target:
                raise PermanentError("the usage panel takes since and by only: metrics have no rule or target")
            points: list[dict[str, Any]] = await genai_usage(self._store, query.since_s, daily=query.by == "day")
        except Exception as exc:
            return json_error(exc, DATA_HEADERS)
        return web.json_response({"since": query.since, "by": query.by, "points": points}, headers=DATA_HEADERS)
