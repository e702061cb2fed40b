"""Evaluation results that arrive over OTLP: ``gen_ai.evaluation.result`` span events and log records.

Applications and other evaluators report their own judgements the way the OpenTelemetry GenAI conventions
describe: an event (on the evaluated span) or a log record (in its trace context) named
``gen_ai.evaluation.result`` with ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` and ``gen_ai.evaluation.explanation``. They are read here so they can be
stored beside spanscore's own scores. spanscore's own results, exported back by ``export/forward.py`` and
marked ``spanscore.internal``, are skipped, so a loop through another collector never stores them twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spanscore.records import LogRecord, SpanRecord

EVALUATION_EVENT = "gen_ai.evaluation.result"
INTERNAL_MARK = "spanscore.internal"
MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class OutsideEvaluation:
    """One evaluation result someone else made, tied to the span it judges."""

    trace_id: str
    span_id: str
    time_ns: int
    name: str
    value: float | None
    label: str
    explanation: str
    service_name: str
    author: str


def evaluations_in_spans(spans: Sequence[SpanRecord]) -> list[OutsideEvaluation]:
    """Every evaluation event on these spans, except spanscore's own."""
    found = []
    for span in spans:
        if not span.events or _internal(span.resource_attributes) or _internal(span.attributes):
            continue
        for event in span.events:
            if event.name != EVALUATION_EVENT or _internal(event.attributes):
                continue
            evaluation = _evaluation(
                event.attributes, span.trace_id, span.span_id, event.time_ns, span.service_name, span.service_name
            )
            if evaluation is not None:
                found.append(evaluation)
    return found


def evaluations_in_logs(logs: Sequence[LogRecord]) -> list[OutsideEvaluation]:
    """Every evaluation log record in a span's context, except spanscore's own."""
    found = []
    for record in logs:
        if record.event_name != EVALUATION_EVENT or not record.trace_id or not record.span_id:
            continue
        if _internal(record.resource_attributes) or _internal(record.attributes):
            continue
        evaluation = _evaluation(
            record.attributes, record.trace_id, record.span_id, record.time_ns, record.service_name, record.service_name
        )
        if evaluation is not None:
            found.append(evaluation)
    return found


def _internal(attributes: Mapping[str, str]) -> bool:
    return attributes.get(INTERNAL_MARK, "").lower() == "true"


def _evaluation(
    attributes: Mapping[str, str], trace_id: str, span_id: str, time_ns: int, service: str, author: str
) -> OutsideEvaluation | None:
    """None when the result names no evaluation or carries neither a value nor a label (nothing to store)."""
    name = attributes.get("gen_ai.evaluation.name", "").strip()[:MAX_NAME_CHARS]
    value = _number(attributes.get("gen_ai.evaluation.score.value"))
    label = attributes.get("gen_ai.evaluation.score.label", "").strip()[:MAX_NAME_CHARS]
    if not name or (value is None and not label):
        return None
    explanation = attributes.get("gen_ai.evaluation.explanation", "")
    return OutsideEvaluation(trace_id, span_id, time_ns, name, value, label, explanation, service, author)


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
