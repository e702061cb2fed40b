"""``SpanscoreClient``: the service's API (port 4319) as typed methods.

Each method is one request to an endpoint the service documents (docs/feedback.md, README's querying and
rules sections); its answer comes back as the JSON the service sent, with ``TypedDict`` shapes where they are
fixed. A refusal raises ``SpanscoreError`` with the service's message, so the reason a call failed is the
service's own, not a guess made here.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

from spanscore_client.errors import SpanscoreError
from spanscore_client.transport import Transport

DEFAULT_URL = "http://127.0.0.1:4319"
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


class Feedback(TypedDict, total=False):
    """One score for ``POST /api/v1/scores``: ``trace_id`` and ``name``, then ``value`` and/or ``label``."""

    trace_id: str
    span_id: str
    name: str
    value: float
    label: str
    comment: str
    source: str
    author: str
    higher_is_better: bool


class FeedbackResult(TypedDict):
    """What the service stored: how many, their ids, and those whose trace it does not hold yet."""

    stored: int
    score_ids: list[str]
    unresolved: list[str]


@dataclass(frozen=True)
class QueryResult:
    """A read query's answer: column names and types, and each row as a mapping of column to value."""

    columns: list[str]
    types: list[str]
    rows: list[dict[str, Any]]


class SpanscoreClient:
    """A spanscore service's API.

    ``base_url`` defaults to ``SPANSCORE_URL`` or ``http://127.0.0.1:4319``; ``token`` to ``SPANSCORE_TOKEN``
    (one of the service's ``api.auth_tokens``; a service without tokens takes none). ``timeout`` bounds
    each call in seconds.
    """

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 30.0) -> None:
        url = base_url or os.environ.get("SPANSCORE_URL") or DEFAULT_URL
        self._http = Transport(url, token if token is not None else os.environ.get("SPANSCORE_TOKEN"), timeout)

    @property
    def base_url(self) -> str:
        return self._http.base_url

    # -- feedback ---------------------------------------------------------------------------------

    def post_feedback(
        self,
        trace_id: str,
        name: str,
        *,
        value: float | None = None,
        label: str | None = None,
        comment: str | None = None,
        source: str = "human",
        author: str | None = None,
        span_id: str | None = None,
        higher_is_better: bool | None = None,
    ) -> FeedbackResult:
        """Store one person's or application's score of a run (a thumbs up is ``label="up"``).

        The trace may arrive after the feedback: the score is stored anyway and listed in ``unresolved``
        until the service holds the trace (docs/feedback.md). A retry stores nothing twice.
        """
        item: dict[str, Any] = {"trace_id": trace_id, "name": name, "source": source}
        optional = {"value": value, "label": label, "comment": comment, "author": author, "span_id": span_id}
        item.update({key: given for key, given in optional.items() if given is not None})
        if higher_is_better is not None:
            item["higher_is_better"] = higher_is_better
        return self.post_scores([cast(Feedback, item)])

    def post_scores(self, scores: Sequence[Feedback]) -> FeedbackResult:
        """Store up to 1,000 scores at once, all or none (a refusal lists each bad field in ``problems``)."""
        items = [dict(score) for score in scores]
        for index, item in enumerate(items):
            _check_ids(index, item)
        return cast(FeedbackResult, self._http.json("POST", "/api/v1/scores", items))

    # -- queries ----------------------------------------------------------------------------------

    def query(self, sql: str) -> QueryResult:
        """Run one read statement (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN, EXISTS); its rows as mappings.

        The service runs it read-only with time, memory and row limits; docs/schema.md lists the tables.
        """
        answer = self._http.json("POST", "/api/v1/query", {"sql": sql, "format": "json"})
        meta = answer.get("meta", []) if isinstance(answer, dict) else []
        rows = answer.get("data", []) if isinstance(answer, dict) else []
        return QueryResult([str(m["name"]) for m in meta], [str(m["type"]) for m in meta], list(rows))

    def query_text(self, sql: str, format: Literal["csv", "tsv", "json"] = "csv") -> str:
        """The answer as the service's text in ``format``, for writing to a file or another tool."""
        return self._http.raw("POST", "/api/v1/query", {"sql": sql, "format": format}).decode("utf-8")

    def query_csv_rows(self, sql: str) -> list[list[str]]:
        """The CSV answer parsed into rows of text, header first."""
        return list(csv.reader(io.StringIO(self.query_text(sql, "csv"))))

    # -- runs and scores --------------------------------------------------------------------------

    def run(self, trace_id: str) -> dict[str, Any]:
        """One trace as its run page shows it: ``spans``, ``scores`` (with reasons) and ``decisions``."""
        return cast(dict[str, Any], self._http.json("GET", f"/api/v1/dashboard/runs/{_trace(trace_id)}"))

    def scored_runs(self, trace_id: str) -> list[dict[str, Any]]:
        """What the scorers received for each scored run of a trace: input, answer, tool calls, context, model."""
        answer = self._http.json("GET", f"/api/v1/runs/{_trace(trace_id)}")
        return cast(list[dict[str, Any]], answer["runs"])

    def scorers(self, since: str = "24h", *, rule: str | None = None) -> list[dict[str, Any]]:
        """Each scorer's count, mean and pass rate over the window (``30m``, ``24h``, ``7d``)."""
        params = _window(since, rule=rule)
        return cast(list[dict[str, Any]], self._http.json("GET", "/api/v1/dashboard/scorers", params=params)["scorers"])

    def trend(
        self, since: str = "24h", *, scorer: str | None = None, rule: str | None = None, by: str = "hour"
    ) -> list[dict[str, Any]]:
        """Mean score per bucket (``by`` hour or day) of each scorer, bucketed by when the run happened."""
        params = {**_window(since, rule=rule, scorer=scorer), "by": by}
        return cast(list[dict[str, Any]], self._http.json("GET", "/api/v1/dashboard/trend", params=params)["points"])

    def worst_runs(
        self, since: str = "24h", *, scorer: str | None = None, rule: str | None = None, limit: int = 20
    ) -> list[dict[str, Any]]:
        """The lowest-scored runs of the window, worst first (at most 200)."""
        params = {**_window(since, rule=rule, scorer=scorer), "limit": str(limit)}
        return cast(list[dict[str, Any]], self._http.json("GET", "/api/v1/dashboard/worst", params=params)["runs"])

    # -- rules ------------------------------------------------------------------------------------

    def rules(self) -> dict[str, Any]:
        """The running rules, their version and where they came from."""
        return cast(dict[str, Any], self._http.json("GET", "/api/v1/rules"))

    def preview_rule(
        self, name: str, since: str = "24h", rules: Sequence[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Matched, sampled and estimated judge calls and cost of rule ``name`` over a past window.

        With ``rules`` the rule is looked up there, not among the running ones: a rule can be costed before
        it is applied.
        """
        body: dict[str, Any] = {"rule": name, "since": since}
        if rules is not None:
            body["rules"] = [dict(rule) for rule in rules]
        return cast(dict[str, Any], self._http.json("POST", "/api/v1/rules/preview", body))

    def apply_rules(self, rules: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Replace the running rule set, whole or not at all; the answer says whether anything ``changed``."""
        body = {"rules": [dict(rule) for rule in rules]}
        return cast(dict[str, Any], self._http.json("PUT", "/api/v1/rules", body))

    # -- the service ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Queues, jobs, scores and decisions, the rules loaded: what ``spanscore status`` prints."""
        return cast(dict[str, Any], self._http.json("GET", "/api/v1/status"))

    def health(self) -> dict[str, Any]:
        """``{"status": "ok"}`` or ``"degraded"`` with the problems."""
        return cast(dict[str, Any], self._http.json("GET", "/healthz"))


def _trace(trace_id: str) -> str:
    lowered = trace_id.lower()
    if not _TRACE_ID.match(lowered):
        raise SpanscoreError(0, f"trace id {trace_id!r} must be 32 hexadecimal characters")
    return lowered


def _check_ids(index: int, item: dict[str, Any]) -> None:
    """Refuse an id the service would refuse, before anything is sent (the service checks again)."""
    trace_id = item.get("trace_id")
    if not isinstance(trace_id, str) or not _TRACE_ID.match(trace_id.lower()):
        raise SpanscoreError(0, f"[{index}].trace_id {trace_id!r} must be 32 hexadecimal characters")
    span_id = item.get("span_id")
    if span_id is not None and (not isinstance(span_id, str) or not _SPAN_ID.match(span_id.lower())):
        raise SpanscoreError(0, f"[{index}].span_id {span_id!r} must be 16 hexadecimal characters")


def _window(since: str, **filters: str | None) -> dict[str, str]:
    return {"since": since, **{key: value for key, value in filters.items() if value}}
