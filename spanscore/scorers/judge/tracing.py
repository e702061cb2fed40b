"""A span per judge call, marked so that spanscore never scores its own judges.

When telemetry export is configured the service hands the judge client an
OpenTelemetry ``Tracer``; each HTTP call to a judge then becomes a CLIENT span
named ``chat <model>`` with the GenAI semantic-convention attributes (model,
token usage, finish reason) plus ``spanscore.judge = true``. The collector and
the samplers treat any span carrying that attribute as internal: stored if
exported back to spanscore, never turned into a run to score (no loops).
Without a tracer every method here is a no-op costing one attribute check.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from spanscore.scorers.judge.transport import Reply

JUDGE_SPAN_ATTRIBUTE = "spanscore.judge"
"""Boolean span attribute set on every judge call; spans carrying it are never scored."""


class _NoSpan:
    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def record_error(self, error: BaseException) -> None:
        return None


class _JudgeSpan:
    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set_attribute(self, key: str, value: Any) -> None:
        self._span.set_attribute(key, value)

    def record_error(self, error: BaseException) -> None:
        # A failure reported across the transport keeps the name of the exception litellm raised.
        self._span.set_attribute("error.type", getattr(error, "error_type", type(error).__name__))
        self._span.set_status(Status(StatusCode.ERROR, str(error)[:200]))


_NO_SPAN = _NoSpan()


class JudgeTracer:
    """Opens judge-call spans on ``tracer``, or does nothing when ``tracer`` is None."""

    def __init__(self, tracer: trace.Tracer | None = None) -> None:
        self._tracer = tracer

    @contextmanager
    def call(self, model: str, mode: str, scorer: str | None) -> Iterator[_JudgeSpan | _NoSpan]:
        if self._tracer is None:
            yield _NO_SPAN
            return
        provider, _, name = model.partition("/")
        attributes: dict[str, Any] = {
            JUDGE_SPAN_ATTRIBUTE: True,
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider if name else "unknown",
            "gen_ai.request.model": name or model,
            "gen_ai.request.temperature": 0.0,
            "spanscore.judge.output_mode": mode,
        }
        if scorer:
            attributes["spanscore.judge.scorer"] = scorer
        with self._tracer.start_as_current_span(
            f"chat {name or model}", kind=SpanKind.CLIENT, attributes=attributes, record_exception=False
        ) as span:
            yield _JudgeSpan(span)


def annotate_reply(span: _JudgeSpan | _NoSpan, reply: Reply, requested_mode: str) -> None:
    """Record what was sent and what came back.

    The mode and parameters are the ones on the wire (``judge.wire``), which may differ from the rung
    asked for: litellm turns ``json_schema`` into a forced tool call or JSON mode for some providers.
    """
    span.set_attribute("spanscore.judge.requested_mode", requested_mode)
    if reply.mode_sent:
        span.set_attribute("spanscore.judge.output_mode", reply.mode_sent)
    for key, value in reply.params_sent.items():
        span.set_attribute(f"gen_ai.request.{key}", value)
    span.set_attribute("spanscore.judge.cost", "priced" if reply.priced else "unknown")
    span.set_attribute("gen_ai.usage.input_tokens", reply.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", reply.output_tokens)
    if reply.finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason])
