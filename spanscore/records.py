"""The decoded span: one row of ``otel_traces``, as plain slotted dataclasses.

This is the hot-path representation between the OTLP decoder, the storage
writer and the run assembler. Attribute values are already in their stored
string form (the OpenTelemetry Collector's ClickHouse exporter convention:
scalars as text, arrays and maps as JSON), so a span read back from storage and
a span fresh off the wire look the same to everything downstream.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SpanEvent:
    time_ns: int
    name: str
    attributes: dict[str, str]


@dataclass(frozen=True, slots=True)
class SpanLink:
    trace_id: str
    span_id: str
    trace_state: str
    attributes: dict[str, str]


@dataclass(slots=True)
class SpanRecord:
    """One span, ids in lowercase hex, times in Unix nanoseconds.

    Treated as immutable but not declared frozen: a frozen dataclass sets each of its 17
    fields through ``object.__setattr__``, which made construction the largest single cost
    of decoding (about 10 us of 30 per span).
    """

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    start_time_ns: int
    end_time_ns: int
    service_name: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    resource_attributes: dict[str, str] = field(default_factory=dict)
    status_code: str = "Unset"
    status_message: str = ""
    trace_state: str = ""
    scope_name: str = ""
    scope_version: str = ""
    events: tuple[SpanEvent, ...] = ()
    links: tuple[SpanLink, ...] = ()


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One OTLP log record; GenAI log events are joined to spans by trace and span id."""

    time_ns: int
    trace_id: str
    span_id: str
    event_name: str
    severity_text: str
    severity_number: int
    body: str
    service_name: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    resource_attributes: dict[str, str] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
