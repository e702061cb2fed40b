"""Feedback on the run that is running: the current OpenTelemetry span's ids into a feedback call.

An application usually learns whether an answer helped while it still holds the span of that answer (or can
keep its context); this reads the ids from it so nobody formats a trace id by hand. Needs
``opentelemetry-api`` (``pip install 'spanscore-client[otel]'``).
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from spanscore_client.client import FeedbackResult, SpanscoreClient
from spanscore_client.errors import SpanscoreError


def current_ids(span: trace.Span | None = None) -> tuple[str, str]:
    """``(trace_id, span_id)`` in the service's hex form, of ``span`` or the current span.

    Raises ``SpanscoreError`` when there is no recording context (no SDK set up, or outside any span), since a
    score for an all-zero trace would never find its run.
    """
    context = (span or trace.get_current_span()).get_span_context()
    if not context.is_valid:
        raise SpanscoreError(
            0, "no current span: call this inside the agent's span (with an OpenTelemetry SDK tracer provider set)"
        )
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)


def feedback_for_current_span(
    client: SpanscoreClient, name: str, *, span: trace.Span | None = None, whole_run: bool = True, **fields: Any
) -> FeedbackResult:
    """``client.post_feedback`` for the current span's trace.

    With ``whole_run`` (the default) the span id is left out, so the score attaches to the root of the trace's
    scored run, beside spanscore's own scores of it; ``whole_run=False`` pins it to this span.
    ``fields`` are ``post_feedback``'s (``value``, ``label``, ``comment``, ``author``...).
    """
    trace_id, span_id = current_ids(span)
    return client.post_feedback(trace_id, name, span_id=None if whole_run else span_id, **fields)
