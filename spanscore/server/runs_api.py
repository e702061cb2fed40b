"""``GET /api/v1/dashboard/runs``: find a run without knowing its trace id.

Search by trace id (a hex prefix), session, user, agent, service, a scorer's result (``scorer`` with
``outcome`` pass/fail/error and/or ``below`` a value), a version (``version_by`` an attribute as
``report compare --by`` takes it, ``version`` its value) and text; paged (``page``, ``per_page``) and sorted
(``sort``: newest, oldest, worst). The same bearer tokens as every API route; parameters are parsed
strictly (unknown or repeated ones refused with their name) and reach SQL only as bound parameters of the
fixed statements in ``spanscore.storage.reads.runs_list``, which also bounds what a text search reads.
"""

from __future__ import annotations

from typing import Annotated, Any

from aiohttp import web
from pydantic import Field, model_validator

from spanscore.server.auth import TokenCheck
from spanscore.server.dashboard import NAME_PATTERN, Window, _error, _json, parse_query
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.runs_list import (
    MAX_PAGE,
    MAX_PER_PAGE,
    SCORES_PER_RUN,
    TEXT_SCAN_RUNS,
    Outcome,
    RunSearch,
    Sort,
    search_runs,
)

Free = Annotated[str, Field(max_length=1000)]
"""Session, user, agent and service ids are the application's own strings: any text, bound, never parsed."""


class RunsQuery(Window):
    """The runs list's query string; ``rule`` and ``target`` (from ``Window``) are refused, not ignored."""

    trace: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{1,32}$")] = ""
    session: Free = ""
    user: Free = ""
    agent: Free = ""
    service: Free = ""
    scorer: Annotated[str, Field(pattern=NAME_PATTERN)] = ""
    outcome: Outcome = ""
    below: float | None = Field(None, allow_inf_nan=False)
    text: Annotated[str, Field(min_length=2, max_length=200)] | None = None
    version_by: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:/\-]{1,200}$")] = ""  # as report compare's --by
    version: Free = ""
    sort: Sort = "newest"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    per_page: int = Field(50, ge=1, le=MAX_PER_PAGE)

    @model_validator(mode="after")
    def _consistent(self) -> RunsQuery:
        if (self.outcome or self.below is not None) and not self.scorer:
            raise ValueError("outcome and below need a scorer (scorer=NAME) to apply to")
        if bool(self.version_by) != bool(self.version):
            raise ValueError(
                "version and version_by go together: version_by=service.version&version=1.5.0 "
                "(version_by names the attribute, as report compare --by does)"
            )
        if self.rule is not None or self.target is not None:
            raise ValueError("the runs list takes no rule or target; filter by scorer instead")
        return self

    def search(self) -> RunSearch:
        return RunSearch(
            since_s=self.since_s, trace=self.trace.lower(), session=self.session, user=self.user, agent=self.agent,
            service=self.service, scorer=self.scorer, outcome=self.outcome, below=self.below, text=self.text or "",
            version_by=self.version_by, version=self.version,
            sort=self.sort, page=self.page, per_page=self.per_page,
        )  # fmt: skip


LIMITS = {"text_scan_runs": TEXT_SCAN_RUNS, "max_per_page": MAX_PER_PAGE, "max_page": MAX_PAGE,
          "scores_per_run": SCORES_PER_RUN}  # fmt: skip
"""Told with every answer, so a page can say what a text search covered."""


class RunsList:
    """The runs list's route on the API application."""

    def __init__(self, store: ClickHouseStore, tokens: TokenCheck) -> None:
        self._store = store
        self._tokens = tokens

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/dashboard/runs", self._runs)

    async def _runs(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            query = parse_query(RunsQuery, request)
            found = await search_runs(self._store, query.search())
        except Exception as exc:
            return _error(exc)
        body: dict[str, Any] = query.model_dump() | found | {"limits": LIMITS}
        return await _json(body)
