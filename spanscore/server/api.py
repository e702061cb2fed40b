"""The service's API listener: read-only SQL, health, metrics and the dashboard.

``spanscore query`` talks to this listener while ``serve`` owns the embedded
store (only one process may open a chDB directory). Queries go through the
storage guard; results come back in the engine's JSON, CSV or TSV output.
Every path sits behind ``spanscore.server.origin.BrowserGuard`` (allowed Host names,
no cross-origin browser requests), and bodies are JSON only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from aiohttp import web

from spanscore.errors import PermanentError, RequestShapeError
from spanscore.sampling.rules import RuleConfig
from spanscore.server.auth import TokenCheck
from spanscore.server.bodies import json_body, read_limited
from spanscore.server.client_gone import while_connected
from spanscore.server.compare_api import CompareApi
from spanscore.server.dashboard import Dashboard
from spanscore.server.dashboard_usage import UsagePanel
from spanscore.server.listeners_config import ApiConfig
from spanscore.server.origin import BrowserGuard, is_loopback
from spanscore.server.otlp_http import serve_app
from spanscore.server.prometheus import exposition
from spanscore.server.rules_api import RuleHolder, RulesApi, checked_rules
from spanscore.server.runs_api import RunsList
from spanscore.server.scores_api import ScoresApi, ScoreTaker
from spanscore.server.wire import json_error
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.query.guard import QUERY_FORMATS
from spanscore.storage.write.deadletter_ops import DeadLetterOps

log = logging.getLogger(__name__)

CONTENT_TYPES = {
    "json": "application/json",
    "jsoneachrow": "application/x-ndjson",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
}

MetricsFn = Callable[[], dict[str, float]]


class Operations(ScoreTaker, Protocol):
    """What the API asks of the service beyond SQL (``spanscore.server.operations.ServiceOperations``)."""

    async def preview(self, rule_name: str, since: str, rules: list[RuleConfig] | None = None) -> dict[str, Any]: ...

    async def backfill(self, rule_name: str, since: str) -> dict[str, Any]: ...

    async def cancel_backfill(self, rule_name: str | None = None) -> dict[str, Any]: ...

    def alerting_state(self) -> list[dict[str, Any]]: ...

    def rules_summary(self) -> list[dict[str, Any]]: ...


class ApiServer:
    def __init__(
        self,
        config: ApiConfig,
        store: ClickHouseStore,
        metrics: MetricsFn,
        operations: Operations,
        rule_holder: RuleHolder,
        *,
        dead_letters: DeadLetterOps | None = None,
        judge: Mapping[str, Any] | None = None,
        degraded: Callable[[], list[str]] | None = None,
        readiness: Callable[[], tuple[bool, list[str]]] | None = None,
    ) -> None:
        self._degraded = degraded
        """What is off in this replica now (a fleet replica cut from Keeper or not a member); /healthz shows it."""
        self._readiness = readiness
        """Whether /readyz keeps this replica in rotation, and what is off (``server.fleet_parts``)."""
        self._judge = judge
        self._rule_holder = rule_holder
        self._dead_letters = dead_letters
        self._operations = operations
        self._config = config
        self._store = store
        self._metrics = metrics
        self._tokens = TokenCheck(config.auth_tokens)
        self._runner: web.AppRunner | None = None
        self.port = 0

    def app(self) -> web.Application:
        guard = BrowserGuard(self._config.allowed_hosts, bind_host=self._config.host)
        app = web.Application(client_max_size=1 << 20, middlewares=[guard.middleware])
        app.router.add_get("/healthz", self._health)
        app.router.add_get("/readyz", self._ready)
        app.router.add_get("/metrics", self._prometheus)
        app.router.add_get("/api/v1/status", self._status)
        app.router.add_get("/api/v1/deadletter", self._dead_letter_list)
        app.router.add_post("/api/v1/deadletter/replay", self._dead_letter_replay)
        app.router.add_route("*", "/api/v1/query", self._query)  # POST only: _query_arguments says why
        app.router.add_post("/api/v1/rules/preview", self._preview)
        app.router.add_post("/api/v1/backfill", self._backfill)
        app.router.add_get("/api/v1/alerts", self._alert_states)
        ScoresApi(self._operations, self._tokens, self._config.host).add_routes(app)
        RulesApi(self._rule_holder, self._tokens, self._config.host, self._judge).add_routes(app)
        Dashboard(self._store, self._tokens, rules=self._operations.rules_summary).add_routes(app)
        RunsList(self._store, self._tokens).add_routes(app)
        UsagePanel(self._store, self._tokens).add_routes(app)
        CompareApi(self._store, self._tokens).add_routes(app)
        return app

    async def _alert_states(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
        except Exception as exc:
            return json_error(exc)
        return web.json_response({"alerts": self._operations.alerting_state()})

    async def _preview(self, request: web.Request) -> web.Response:
        return await self._operation(request, "preview")

    async def _backfill(self, request: web.Request) -> web.Response:
        return await self._operation(request, "backfill")

    async def _operation(self, request: web.Request, name: str) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            _require_json(request)
            body = json_body(await read_limited(request), "request body")
            body = {} if body is None else body
            if name == "backfill" and isinstance(body, dict) and body.get("cancel") is True:
                rule = body.get("rule")
                return web.json_response(
                    await self._operations.cancel_backfill(rule if isinstance(rule, str) else None)
                )
            if not isinstance(body, dict) or not isinstance(body.get("rule"), str):
                raise PermanentError(
                    'request body must be {"rule": "NAME", "since": "24h"} (a preview may add "rules")'
                )
            since = str(body.get("since", "24h"))
            if name == "preview":
                result = await self._operations.preview(body["rule"], since, await self._given_rules(body))
            else:
                result = await self._operations.backfill(body["rule"], since)
        except Exception as exc:
            return json_error(exc)
        return web.json_response(result)

    async def _given_rules(self, body: dict[str, Any]) -> list[RuleConfig] | None:
        """A preview's own rules (not applied yet), held to the same trust check as a PUT of them."""
        if "rules" not in body:
            return None
        paths = self._rule_holder.operator_scorer_paths
        return await asyncio.to_thread(checked_rules, {"rules": body["rules"]}, paths, self._judge or {})

    async def _health(self, request: web.Request) -> web.Response:
        """200 either way: "degraded" with reasons while a writer is stuck, rows are dead-lettered, or Keeper is cut.

        A fleet replica cut from Keeper says so in ``degraded`` and what is off in ``off``; /readyz is its 503.

        Not 503: the receivers still take and keep data, and a probe that restarts the process or
        takes it out of rotation would not fix a dead letter (see docs/reliability.md).
        """
        problems = self._dead_letters.health() if self._dead_letters is not None else []
        off = self._degraded() if self._degraded is not None else []
        body: dict[str, Any] = {"status": "degraded" if problems or off else "ok", "database": self._store.database}
        if problems:
            body["problems"] = problems
        if off:
            body["degraded"], body["off"] = off[0], off[1:]
        return web.json_response(body)

    async def _ready(self, request: web.Request) -> web.Response:
        """503 while a fleet replica should be out of rotation (not a member while others are), naming what is off.

        Readiness, not liveness: a restart does not bring Keeper back, but a replica that cannot lead, lease
        or change rules is one the fleet's other replicas should take the traffic from; when none of them
        has Keeper either, all stay in rotation (200, still naming what is off) so that ingest goes on
        (docs/deployment.md).
        """
        ready, off = self._readiness() if self._readiness is not None else (True, [])
        body: dict[str, Any] = {"ready": ready}
        if off:
            body["degraded"], body["off"] = off[0], off[1:]
        return web.json_response(body, status=200 if ready else 503)

    async def _dead_letter_list(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
        except Exception as exc:
            return json_error(exc)
        ops = self._dead_letters
        entries = ops.entries() if ops is not None else []
        return web.json_response({"entries": entries, "problems": ops.health() if ops is not None else []})

    async def _dead_letter_replay(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            writer, entry = await _replay_arguments(request)
            if self._dead_letters is None:
                raise PermanentError("this API has no write path to replay dead letters into")
            return web.json_response(await self._dead_letters.replay(writer, entry))
        except Exception as exc:
            return json_error(exc)

    async def _status(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
        except Exception as exc:
            return json_error(exc)
        return web.json_response(self._metrics())

    async def _prometheus(self, request: web.Request) -> web.Response:
        try:
            if not self._config.metrics_public:
                self._tokens.verify(request.headers.get("Authorization"))
        except Exception as exc:
            return json_error(exc)
        body, content_type = exposition(self._metrics())
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _query(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            sql, fmt = await _query_arguments(request, self._store.limits.max_query_bytes)
            if fmt not in QUERY_FORMATS:
                raise PermanentError(f"unknown format {fmt!r}; use one of {', '.join(QUERY_FORMATS)}")
            result = await while_connected(request, self._store.query(sql, fmt))
        except RequestShapeError as exc:
            return json_error(exc, {"Allow": "POST"} if exc.status == 405 else None)
        except Exception as exc:
            return json_error(exc)
        return web.Response(body=result, content_type=CONTENT_TYPES[fmt])

    async def start(self) -> None:
        self._runner, self.port = await serve_app(self.app(), self._config)
        log.info("API listening address=%s:%d", self._config.host, self.port)
        if not self._tokens.enabled and not is_loopback(self._config.host):
            log.warning(
                "API on a non-loopback address without api.auth_tokens: anyone who can reach address=%s:%d can "
                "query every stored span and score; set api.auth_tokens",
                self._config.host,
                self.port,
            )

    async def shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def _replay_arguments(request: web.Request) -> tuple[str | None, str | None]:
    """``{"writer": "spans", "id": "000000000001"}``, both optional (all writers, all entries)."""
    usage = 'send a JSON object such as {"writer": "spans", "id": "000000000001"} (both optional)'
    raw = await read_limited(request) if request.can_read_body else b""
    try:
        body = json_body(raw, "the replay request") if raw else {}
    except PermanentError as exc:
        raise PermanentError(f"{exc}; {usage}") from None
    body = {} if body is None else body
    if not isinstance(body, dict):
        raise PermanentError(usage)
    writer, entry = body.get("writer"), body.get("id")
    if not isinstance(writer, str | None) or not isinstance(entry, str | None):
        raise PermanentError(f"writer and id must be strings; {usage}")
    return writer, entry


async def _query_arguments(request: web.Request, max_query_bytes: int) -> tuple[str, str]:
    """The SQL and format of a ``POST`` with an ``application/json`` body; anything else is refused.

    A GET (``<img src>``, a link, a prefetch) and a ``text/plain`` or form POST are requests any web page
    can make a browser send without asking the server first; a JSON POST from another origin needs a
    CORS preflight, which this API never grants. A GET would also put the SQL in URLs, histories and
    logs. No client needs either: ``spanscore query`` posts JSON and the dashboard reads fixed endpoints.
    """
    if request.method != "POST":
        raise RequestShapeError(
            f'{request.method} is not accepted here: POST the query as JSON, {{"sql": "...", "format": "json"}}', 405
        )
    _require_json(request)
    what = f"the request body (the query in it may be {max_query_bytes} bytes: storage.query_max_bytes)"
    body = json_body(await read_limited(request, what=what), "request body")
    body = {} if body is None else body
    if not isinstance(body, dict) or not isinstance(body.get("sql"), str):
        raise PermanentError('request body must be {"sql": "...", "format": "json|csv|tsv"}')
    return body["sql"], str(body.get("format", request.query.get("format", "json"))).lower()


def _require_json(request: web.Request) -> None:
    """Bodies are JSON only: a text/plain or form POST is one any web page can send without a CORS preflight."""
    if request.content_type != "application/json":
        raise RequestShapeError(
            f"Content-Type {request.content_type!r} is not accepted: send the body as application/json", 415
        )
