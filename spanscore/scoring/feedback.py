"""Scores from outside spanscore, stored beside its own: people's labels, applications' evaluations, OTLP results.

``POST /api/v1/scores`` takes ``OutsideScore`` objects (one or a list); ``gen_ai.evaluation.result`` span events
and log records arrive with the spans (``collector.evaluation_events``). Both become ``ScoreRow``s with a
``Source`` (the sender's, or ``otlp``) and ``Rule = 'source:<source>'``, so roll-ups, reports and dashboards
show them next to the rules without a change to their views. Their id is deterministic in (source, author,
name, trace, span as named): a retried POST or a re-sent export replaces the row instead of counting twice,
while two people's labels on one run stay two rows. A posted score may arrive before its trace is stored: it
is kept, unresolved, and attached to its span when the span arrives (``feedback_resolver``).

An outside score is not a sampled one: its ``SampleRate`` is 1, so weighted means count it once.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spanscore.collector.outside_rows import ScoredSpan, label_of, outside_score_row
from spanscore.errors import PermanentError
from spanscore.storage.scores import ScoreRow, external_score_id

RESERVED_SOURCES = frozenset({"spanscore", "otlp"})
"""``spanscore`` marks its own scorers' rows and ``otlp`` the results read from telemetry; a POST may use neither."""
MAX_SCORES_PER_REQUEST = 1000
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")


def _hex_id(value: str, pattern: re.Pattern[str], digits: int, what: str) -> str:
    """A trace or span id in lower case, or ``ValueError`` saying what is wrong with it."""
    value = value.lower()
    if not pattern.match(value):
        raise ValueError(f"must be {digits} hexadecimal characters")
    if value == "0" * digits:
        raise ValueError(f"must not be all zeros (the invalid {what} id: no span can carry it)")
    return value


_SOURCE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


class InvalidScoresError(PermanentError):
    """A POSTed body that cannot be stored; ``problems`` names each field (``[2].trace_id: ...``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("scores refused, nothing stored: " + "; ".join(problems))
        self.problems = problems


class OutsideScore(BaseModel):
    """One score given from outside: a person's label or an application's evaluation of a run or span."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    trace_id: str
    """The scored trace, 32 lower-case hex characters as OTLP carries it."""
    span_id: str | None = None
    """The scored span (16 hex); absent: the trace's root span."""
    name: str = Field(min_length=1, max_length=200)
    """What was judged, e.g. ``helpfulness``; pair it with a scorer's id to compare with that scorer."""
    value: float | None = None
    label: str | None = Field(None, max_length=200)
    comment: str = Field("", max_length=10_000)
    source: str = "human"
    author: str = Field("", max_length=200)
    higher_is_better: bool = True

    @field_validator("trace_id")
    @classmethod
    def _trace_hex(cls, value: str) -> str:
        return _hex_id(value, _HEX32, 32, "trace")

    @field_validator("span_id")
    @classmethod
    def _span_hex(cls, value: str | None) -> str | None:
        return None if value is None else _hex_id(value, _HEX16, 16, "span")

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("source")
    @classmethod
    def _source_name(cls, value: str) -> str:
        if not _SOURCE.match(value):
            raise ValueError("must be 1-64 lower-case letters, digits, '_', '.' or '-' (e.g. human, app)")
        if value in RESERVED_SOURCES:
            raise ValueError(f"{value!r} is reserved for spanscore's own scores; name your source (e.g. human, app)")
        return value

    @model_validator(mode="after")
    def _value_or_label(self) -> OutsideScore:
        if self.value is None and not self.label:
            raise ValueError("give a value, a label or both")
        return self


def parse_scores(document: Any) -> list[OutsideScore]:
    """Validate a POST body (an object or a list of them) whole; ``InvalidScoresError`` names every bad field."""
    items = document if isinstance(document, list) else [document]
    if not items:
        raise InvalidScoresError(["the list is empty: send at least one score"])
    if len(items) > MAX_SCORES_PER_REQUEST:
        raise InvalidScoresError([f"{len(items)} scores in one request; send at most {MAX_SCORES_PER_REQUEST}"])
    parsed: list[OutsideScore] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        where = f"[{index}]" if isinstance(document, list) else ""
        if not isinstance(item, dict):
            problems.append(f"{where or 'body'}: expected an object, got {type(item).__name__}")
            continue
        try:
            parsed.append(OutsideScore.model_validate(item))
        except ValidationError as error:
            for detail in error.errors():
                field = ".".join(str(part) for part in detail["loc"])
                path = f"{where}.{field}" if where and field else (where or field or "body")
                problems.append(f"{path}: {detail['msg'].removeprefix('Value error, ')}")
    if problems:
        raise InvalidScoresError(problems)
    return parsed


PENDING_SPAN = "pending_span"
NEVER_RESOLVED = "never_resolved"
"""Set (to the score as posted) on a pending score whose trace did not arrive while it was looked for."""
"""Attribute of a posted score whose span storage did not hold yet: the score as posted, to resolve it later."""


def row_for_posted(score: OutsideScore, span: ScoredSpan, *, posted_at_ns: int | None = None) -> ScoreRow:
    """The stored row of a posted score, attached to ``span``.

    Its id comes from the span the sender named (none: the root), not the one storage resolved, so a score
    posted before its trace arrived is replaced in place once it is resolved; ``posted_at_ns`` keeps that
    first row's timestamp, which is part of the table's sorting key.
    """
    row = outside_score_row(
        source=score.source,
        author=score.author,
        name=score.name,
        trace_id=score.trace_id,
        span=span,
        value=score.value,
        label=label_of(score.label, score.value, score.higher_is_better),
        reason=score.comment,
        higher_is_better=score.higher_is_better,
        raw_label=score.label or "",
    )
    score_id = external_score_id(score.source, score.author, score.name, score.trace_id, score.span_id or "")
    timestamp = posted_at_ns if posted_at_ns is not None else row.run_timestamp_ns
    return dataclasses.replace(row, score_id=score_id, run_timestamp_ns=timestamp)


def row_for_unresolved(score: OutsideScore, now_ns: int) -> ScoreRow:
    """A posted score whose trace storage does not hold yet: kept, visibly unresolved, until the trace arrives.

    Exporters batch and ``spooled`` acknowledgement stores after the OK, so an application's feedback button
    can post before its span is stored. The row carries the score as posted (``PENDING_SPAN``); the feedback
    resolver attaches it to its span once storage has it, and a row never resolved stays as it is.
    """
    row = row_for_posted(score, ScoredSpan(score.span_id or "", now_ns), posted_at_ns=now_ns)
    return dataclasses.replace(row, attributes={**row.attributes, PENDING_SPAN: score.model_dump_json()})


def row_never_resolved(score: OutsideScore, posted_at_ns: int) -> ScoreRow:
    """A pending score whose trace never came, marked so (same id, same time): no longer looked for or pending.

    Kept, not deleted: it was acknowledged. Dashboards and ``status`` count it apart from attached scores.
    """
    row = row_for_posted(score, ScoredSpan(score.span_id or "", posted_at_ns), posted_at_ns=posted_at_ns)
    return dataclasses.replace(row, attributes={**row.attributes, NEVER_RESOLVED: score.model_dump_json()})
