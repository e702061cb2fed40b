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
from collections.abc import Iterable, Mapping, Sequence
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
    events = (
        (span, event.attributes, event.time_ns)
        for span in spans
        if span.events and not _internal(span)
        for event in span.events
        if event.name == EVALUATION_EVENT and not _marked(event.attributes)
    )
    return _evaluations(events)


def evaluations_in_logs(logs: Sequence[LogRecord]) -> list[OutsideEvaluation]:
    """Every evaluation log record in a span's context, except spanscore's own."""
    records = (
        (record, record.attributes, record.time_ns)
        for record in logs
        if record.event_name == EVALUATION_EVENT and record.trace_id and record.span_id and not _internal(record)
    )
    return _evaluations(records)


def _internal(record: SpanRecord | LogRecord) -> bool:
    """Spanscore's own result, exported back: marked on its resource or on itself."""
    return _marked(record.resource_attributes) or _marked(record.attributes)


def _marked(attributes: Mapping[str, str]) -> bool:
    return attributes.get(INTERNAL_MARK, "").lower() == "true"


def _evaluations(
    results: Iterable[tuple[SpanRecord | LogRecord, Mapping[str, str], int]],
) -> list[OutsideEvaluation]:
    """The results that name an evaluation and carry a value or a label (the others hold nothing to store).

    Each is tied to the span it judges (the event's span, or the log record's span context); its author is
    the service that reported it.
    """
    found = []
    for record, attributes, time_ns in results:
        name = attributes.get("gen_ai.evaluation.name", "").strip()[:MAX_NAME_CHARS]
        value = _number(attributes.get("gen_ai.evaluation.score.value"))
        label = attributes.get("gen_ai.evaluation.score.label", "").strip()[:MAX_NAME_CHARS]
        if not name or (value is None and not label):
            continue
        explanation = attributes.get("gen_ai.evaluation.explanation", "")
        service = record.service_name
        found.append(
            OutsideEvaluation(
                record.trace_id, record.span_id, time_ns, name, value, label, explanation, service, service
            )
        )
    return found


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
