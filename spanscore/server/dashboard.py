"""The dashboard on the API listener: two static pages and the JSON they read.

``GET /dashboard/`` shows score trends per scorer, the worst runs, coverage
and judge cost; ``GET /dashboard/run?trace=ID`` shows one trace's spans with
its scores and their reasons. The pages carry no data: they fetch it from
``/api/v1/dashboard/*``, which checks the API's bearer tokens like every other
API route. Request parameters are parsed strictly here (pydantic, unknown
parameters refused) and reach SQL only as bound parameters of the fixed
statements in ``spanscore.storage.reads.dashboard``. Assets are package data, read
once at start; nothing is fetched from elsewhere, and the pages' CSP says so.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Annotated, Any, Literal, TypedDict, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spanscore.durations import duration_seconds, parse_since
from spanscore.errors import ConfigError, PermanentError
from spanscore.run import TARGETS
from spanscore.server.auth import TokenCheck
from spanscore.server.dashboard_scales import add_scales, configured_scales
from spanscore.server.static_pages import assemble
from spanscore.server.wire import json_error
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.dashboard import DashboardReader, scored_runs
from spanscore.storage.reads.dashboard_minutes import MAX_MINUTE_WINDOW_S

MAX_WINDOW_S = 400 * 86400
"""The longest ``since`` window accepted (the hourly roll-up keeps history; this bounds one read)."""
NAME_PATTERN = r"^[A-Za-z0-9_.:\-]{1,200}$"
"""Scorer ids and rule names as the config accepts them; anything else is refused, not escaped."""
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")

CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".txt": "text/plain"}
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
DATA_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}

Name = Annotated[str, Field(pattern=NAME_PATTERN)]


class Window(BaseModel):
    """``since`` (30m, 24h, 7d, 2w), an optional rule and target; every endpoint takes these."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    since: str = "24h"
    rule: Name | None = None
    target: str | None = None

    @field_validator("since")
    @classmethod
    def _known_window(cls, value: str) -> str:
        try:
            seconds = duration_seconds(value)
        except ConfigError:
            raise ValueError("must look like 30m, 24h, 7d or 2w") from None
        if not 1 <= seconds <= MAX_WINDOW_S:
            raise ValueError(f"must be between 1s and {MAX_WINDOW_S // 86400}d")
        return value.strip()

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str | None) -> str | None:
        if value is not None and value not in TARGETS:
            raise ValueError(f"must be one of {', '.join(TARGETS)}")
        return value

    @property
    def since_s(self) -> int:
        return int(parse_since(self.since))

    @property
    def where(self) -> dict[str, str]:
        """The filters as the reader takes them ('' for all)."""
        return {"rule": self.rule or "", "target": self.target or ""}


class ScorerWindow(Window):
    scorer: Name | None = None

    @property
    def where(self) -> dict[str, str]:
        return {**super().where, "scorer": self.scorer or ""}


Bucket = Literal["minute", "hour", "day"]


def _short_enough(query: Any) -> Any:
    """Minute buckets only over short windows (``MAX_MINUTE_WINDOW_S``): a week of minutes is 10,080 points a name."""
    if query.by == "minute" and query.since_s > MAX_MINUTE_WINDOW_S:
        raise ValueError(f"minute buckets are for windows up to {MAX_MINUTE_WINDOW_S // 3600}h; use by=hour or by=day")
    return query


class TrendQuery(ScorerWindow):
    """The score chart, and the coverage and cost charts drawn on its time axis: one window, one bucket."""

    by: Bucket = "hour"
    _short = model_validator(mode="after")(_short_enough)


class CoverageQuery(Window):
    by: Bucket = "hour"
    _short = model_validator(mode="after")(_short_enough)


class WorstQuery(ScorerWindow):
    limit: int = Field(20, ge=1, le=200)


Q = TypeVar("Q", bound=BaseModel)


def parse_query(model: type[Q], request: web.Request) -> Q:
    """The request's query string as ``model``; a repeated or unknown parameter is refused with its name."""
    values: dict[str, str] = {}
    for key, value in request.query.items():
        if key in values:
            raise PermanentError(f"query parameter {key!r} is given more than once")
        values[key] = value
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'query'}: {e['msg']}" for e in exc.errors())
        raise PermanentError(f"invalid dashboard query: {problems}") from None


def load_assets() -> dict[str, tuple[bytes, str]]:
    """Every file under ``static/`` by its relative path, with its content type; pages with their parts."""
    assets: dict[str, tuple[bytes, str]] = {}

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
                continue
            suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
            if suffix in CONTENT_TYPES:
                assets[prefix + entry.name] = (entry.read_bytes(), CONTENT_TYPES[suffix])

    walk(resources.files("spanscore.server") / "static", "")
    return assemble(assets)


class Dashboard:
    """Adds the dashboard's pages, assets and data endpoints to the API application."""

    def __init__(
        self, store: ClickHouseStore, tokens: TokenCheck, rules: Callable[[], list[dict[str, Any]]] | None = None
    ) -> None:
        self._rules = rules
        self._reader = DashboardReader(store)
        self._store = store
        self._tokens = tokens
        self._assets = load_assets()

    def add_routes(self, app: web.Application) -> None:
        router = app.router
        router.add_get("/dashboard", self._to_index)
        router.add_get("/dashboard/", self._index)
        router.add_get("/dashboard/run", self._run_page)
        router.add_get("/dashboard/session", self._session_page)
        router.add_get("/dashboard/runs", self._runs_page)
        router.add_get("/dashboard/static/{path:.+}", self._asset)
        router.add_get("/api/v1/dashboard/scorers", self._scorers)
        router.add_get("/api/v1/dashboard/trend", self._trend)
        router.add_get("/api/v1/dashboard/worst", self._worst)
        router.add_get("/api/v1/dashboard/coverage", self._coverage)
        router.add_get("/api/v1/dashboard/cost", self._cost)
        router.add_get("/api/v1/dashboard/runs/{trace_id}", self._run)
        router.add_get("/api/v1/dashboard/sessions/{session_id}", self._session)
        router.add_get("/api/v1/runs/{trace_id}", self._scored_runs)

    # -- pages and assets -----------------------------------------------------------------------

    async def _to_index(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/dashboard/")

    async def _index(self, request: web.Request) -> web.Response:
        return self._file("index.html")

    async def _run_page(self, request: web.Request) -> web.Response:
        return self._file("run.html")

    async def _session_page(self, request: web.Request) -> web.Response:
        return self._file("session.html")

    async def _runs_page(self, request: web.Request) -> web.Response:
        return self._file("runs.html")

    async def _asset(self, request: web.Request) -> web.Response:
        return self._file(request.match_info["path"])

    def _file(self, path: str) -> web.Response:
        found = self._assets.get(path)
        if found is None:
            return web.Response(status=404, text="not found\n", headers=DATA_HEADERS)
        body, content_type = found
        return web.Response(body=body, content_type=content_type, charset="utf-8", headers=PAGE_HEADERS)

    # -- data -----------------------------------------------------------------------------------

    async def _scorers(self, request: web.Request) -> web.Response:
        async def fetch(query: Window) -> dict[str, Any]:
            # The loaded rules travel with the scorers, so an empty page can say whether anything is scored at all.
            rules = self._rules() if self._rules is not None else None
            rows, others = await self._reader.scorers(query.since_s, rule=query.rule or "", target=query.target or "")
            names = [row["scorer"] for row in rows]
            ranges = await self._reader.value_ranges(query.since_s, **query.where, names=names)
            return {"scorers": add_scales(rows, ranges, configured_scales(rules)), "others": others, "rules": rules}

        return await self._answer(request, Window, fetch)

    async def _trend(self, request: web.Request) -> web.Response:
        async def fetch(query: TrendQuery) -> dict[str, Any]:
            points = await self._reader.trend(query.since_s, **query.where, **_grain(query.by))
            return {"by": query.by, "points": points}

        return await self._answer(request, TrendQuery, fetch)

    async def _worst(self, request: web.Request) -> web.Response:
        async def fetch(query: WorstQuery) -> dict[str, Any]:
            runs = await self._reader.worst_runs(query.since_s, **query.where, limit=query.limit)
            return {"runs": runs}

        return await self._answer(request, WorstQuery, fetch)

    async def _coverage(self, request: web.Request) -> web.Response:
        async def fetch(query: CoverageQuery) -> dict[str, Any]:
            return {"points": await self._reader.coverage(query.since_s, **query.where, **_grain(query.by))}

        return await self._answer(request, CoverageQuery, fetch)

    async def _cost(self, request: web.Request) -> web.Response:
        async def fetch(query: TrendQuery) -> dict[str, Any]:
            return {"points": await self._reader.judge_cost(query.since_s, **query.where, **_grain(query.by))}

        return await self._answer(request, TrendQuery, fetch)

    async def _run(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            if request.query:
                raise PermanentError("the run endpoint takes no query parameters")
            trace_id = request.match_info["trace_id"].lower()
            if not _TRACE_ID.match(trace_id):
                raise PermanentError("trace id must be 32 hexadecimal characters")
            run = await self._reader.run(trace_id)
        except Exception as exc:
            return _error(exc)
        if not (run["spans"] or run["scores"] or run["decisions"]):
            return await _json({"error": f"no spans, scores or decisions stored for trace {trace_id}"}, status=404)
        return await _json(run)

    async def _session(self, request: web.Request) -> web.Response:
        """One conversation's turns with their scores, and the session's own scores."""
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            if request.query:
                raise PermanentError("the session endpoint takes no query parameters")
            session_id = request.match_info["session_id"]
            if not session_id or len(session_id) > 1000:
                raise PermanentError("session id must be 1 to 1000 characters")
            session = await self._reader.session(session_id)
        except Exception as exc:
            return _error(exc)
        if not (session["turns"] or session["scores"]):
            return await _json({"error": f"no turns or scores stored for session {session_id!r}"}, status=404)
        # Which loaded rules score whole sessions: none means no session score will ever come, and the page says so.
        rules = self._rules() if self._rules is not None else None
        session["session_rules"] = None if rules is None else [r["name"] for r in rules if r["target"] == "session"]
        return await _json(session)

    async def _scored_runs(self, request: web.Request) -> web.Response:
        """What the scorers received for each scored run of one trace: ``{"trace_id", "runs": [...]}``."""
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            if request.query:
                raise PermanentError("the runs endpoint takes no query parameters")
            trace_id = request.match_info["trace_id"].lower()
            if not _TRACE_ID.match(trace_id):
                raise PermanentError("trace id must be 32 hexadecimal characters")
            runs = await scored_runs(self._store, trace_id)
        except Exception as exc:
            return _error(exc)
        if not runs:
            return await _json(
                {"error": f"no scored run stored for trace {trace_id} (not scored, or expired)"}, status=404
            )
        return await _json({"trace_id": trace_id, "runs": runs})

    async def _answer(
        self, request: web.Request, model: type[Q], fetch: Callable[[Q], Awaitable[dict[str, Any]]]
    ) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            query = parse_query(model, request)
            body = await fetch(query)
        except Exception as exc:
            return _error(exc)
        return await _json(query.model_dump() | body)


class Grain(TypedDict):
    daily: bool
    minutes: bool


def _grain(by: str) -> Grain:
    """The reader's bucket arguments for ``by`` (hours when neither is set)."""
    return {"daily": by == "day", "minutes": by == "minute"}


async def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    """``body`` encoded on a worker thread: a run page or a long window can be megabytes of JSON."""
    text = await asyncio.to_thread(json.dumps, body, allow_nan=False)
    return web.Response(text=text, status=status, content_type="application/json", headers=DATA_HEADERS)


def _error(exc: BaseException) -> web.Response:
    return json_error(exc, DATA_HEADERS)
