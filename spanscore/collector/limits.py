"""Per-request and per-field limits applied between decoding and storage, to spans and logs alike.

A request with more spans or log records than allowed is refused whole (413 / RESOURCE_EXHAUSTED) so
nothing of it is half-stored. Every string the wire carries is bounded: attribute values, log bodies and
status messages by ``max_attribute_value_chars``; names, versions, keys, severities and trace states by
``max_name_chars``; resource and scope attribute values, which storage repeats on every row, by the smaller
``max_resource_attribute_value_chars``. A cut string ends with a marker saying how much was dropped,
attributes beyond the per-set cap are dropped, and both are counted so the loss is never silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from spanscore.collector.bounds import DecodeBounds, Drops
from spanscore.collector.limits_config import LimitsConfig
from spanscore.errors import PayloadTooLargeError
from spanscore.records import LogRecord, SpanEvent, SpanLink, SpanRecord

__all__ = ["LimitCounters", "Limiter", "LimitsConfig", "apply_limits", "apply_log_limits"]

TRUNCATION_MARKER = "...[truncated by spanscore: {dropped} more characters]"


@dataclass(slots=True)
class LimitCounters:
    truncated_values: int = 0
    refused_requests: int = 0
    refused_log_requests: int = 0
    dropped: Drops = field(default_factory=Drops)
    """Events, links and attributes dropped by the count caps, summed over requests."""

    def add_decode_drops(self, bounds: DecodeBounds) -> None:
        """Add what one request's decoding dropped (events, links, event and link attributes)."""
        self.dropped.add(bounds.dropped)


class Limiter:
    """Applies one config to the strings of one request; shared resource dicts are limited once."""

    def __init__(self, config: LimitsConfig, counters: LimitCounters) -> None:
        self.config = config
        self.counters = counters
        self._shared: dict[int, tuple[dict[str, str], dict[str, str]]] = {}

    def text(self, value: str, longest: int) -> str:
        if len(value) <= longest:
            return value
        self.counters.truncated_values += 1
        return value[:longest] + TRUNCATION_MARKER.format(dropped=len(value) - longest)

    def name(self, value: str) -> str:
        return value if len(value) <= self.config.max_name_chars else self.text(value, self.config.max_name_chars)

    def attributes(self, attributes: dict[str, str], longest: int) -> dict[str, str]:
        config = self.config
        if len(attributes) > config.max_attributes_per_span:
            self.counters.dropped.attributes += len(attributes) - config.max_attributes_per_span
            attributes = dict(list(attributes.items())[: config.max_attributes_per_span])
        names = config.max_name_chars
        if all(len(v) <= longest and len(k) <= names for k, v in attributes.items()):
            return attributes
        return {self.name(key): self.text(value, longest) for key, value in attributes.items()}

    def shared(self, attributes: dict[str, str]) -> dict[str, str]:
        """Resource and scope attributes: one dict object is shared by every row of its group."""
        found = self._shared.get(id(attributes))
        if found is not None and found[0] is attributes:
            return found[1]
        limited = self.attributes(attributes, self.config.max_resource_attribute_value_chars)
        self._shared[id(attributes)] = (attributes, limited)
        return limited

    def span(self, span: SpanRecord) -> SpanRecord:
        longest = self.config.max_attribute_value_chars
        names = self.config.max_name_chars
        attributes = self.attributes(span.attributes, longest)
        resource = self.shared(span.resource_attributes)
        if (
            attributes is span.attributes
            and resource is span.resource_attributes
            and len(span.name) <= names
            and len(span.status_message) <= longest
            and max(len(span.trace_state), len(span.scope_name), len(span.scope_version)) <= names
            and not span.events
            and not span.links
        ):
            return span
        return replace(
            span,
            name=self.name(span.name),
            attributes=attributes,
            resource_attributes=resource,
            service_name=resource.get("service.name", ""),
            status_message=self.text(span.status_message, longest),
            trace_state=self.name(span.trace_state),
            scope_name=self.name(span.scope_name),
            scope_version=self.name(span.scope_version),
            events=tuple(self._event(e) for e in span.events),
            links=tuple(self._link(link) for link in span.links),
        )

    def _event(self, event: SpanEvent) -> SpanEvent:
        attributes = self.attributes(event.attributes, self.config.max_attribute_value_chars)
        if attributes is event.attributes and len(event.name) <= self.config.max_name_chars:
            return event
        return SpanEvent(event.time_ns, self.name(event.name), attributes)

    def _link(self, link: SpanLink) -> SpanLink:
        attributes = self.attributes(link.attributes, self.config.max_attribute_value_chars)
        return SpanLink(link.trace_id, link.span_id, self.name(link.trace_state), attributes)

    def log(self, record: LogRecord) -> LogRecord:
        longest = self.config.max_attribute_value_chars
        resource = self.shared(record.resource_attributes)
        return replace(
            record,
            event_name=self.name(record.event_name),
            severity_text=self.name(record.severity_text),
            body=self.text(record.body, longest),
            service_name=resource.get("service.name", ""),
            attributes=self.attributes(record.attributes, longest),
            resource_attributes=resource,
            scope_name=self.name(record.scope_name),
            scope_version=self.name(record.scope_version),
        )


def apply_limits(spans: Sequence[SpanRecord], config: LimitsConfig, counters: LimitCounters) -> list[SpanRecord]:
    """Refuse an over-long request; return spans with every string and attribute set within bounds."""
    if len(spans) > config.max_spans_per_request:
        counters.refused_requests += 1
        raise PayloadTooLargeError(
            f"request holds {len(spans)} spans; the limit is {config.max_spans_per_request} per request"
        )
    limiter = Limiter(config, counters)
    return [limiter.span(span) for span in spans]


def apply_log_limits(records: Sequence[LogRecord], config: LimitsConfig, counters: LimitCounters) -> list[LogRecord]:
    """The same for log records: refuse an over-long request, bound every string of the rest."""
    if len(records) > config.max_log_records_per_request:
        counters.refused_log_requests += 1
        raise PayloadTooLargeError(
            f"request holds {len(records)} log records; the limit is {config.max_log_records_per_request} "
            "per request (collector.limits.max_log_records_per_request)"
        )
    limiter = Limiter(config, counters)
    return [limiter.log(record) for record in records]
