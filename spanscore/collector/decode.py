"""OTLP trace and log requests (protobuf or OTLP/JSON) to ``SpanRecord`` rows.

Decoding is a pure function so it can be round-trip and property tested. Spans
that cannot be stored (bad id lengths) are rejected one by one and reported as
a partial success, as the OTLP specification asks; a request that cannot be
parsed at all raises ``PermanentError`` and nothing of it is kept.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from spanscore.collector.otlp_json import parse_otlp_json
from spanscore.errors import PermanentError
from spanscore.records import LogRecord, SpanEvent, SpanLink, SpanRecord

T = TypeVar("T")
M = TypeVar("M", ExportTraceServiceRequest, ExportLogsServiceRequest)

SPAN_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
STATUS_CODES = ("Unset", "Ok", "Error")


@dataclass(slots=True)
class Decoded(Generic[T]):
    """What one export request yielded: accepted items plus the rejected count and why."""

    items: list[T]
    rejected: int = 0
    error_message: str = ""


def any_value_to_python(value: AnyValue) -> Any:
    """The JSON-able Python value of an OTLP AnyValue (bytes become base64 text)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value_to_python(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value_to_python(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, which)


def any_value_to_str(value: AnyValue) -> str:
    """The stored text of an attribute value: scalars as text, arrays and maps as JSON."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return str(value.int_value)
    if which == "bool_value":
        return "true" if value.bool_value else "false"
    if which == "double_value":
        return repr(value.double_value)
    if which is None:
        return ""
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return json.dumps(any_value_to_python(value), ensure_ascii=False, separators=(",", ":"))


def attributes_to_dict(attributes: Any) -> dict[str, str]:
    """Flatten repeated KeyValue into a dict; a repeated key keeps its last value.

    The hot loop of ingest: string values (most of them) are stored without a call.
    """
    out: dict[str, str] = {}
    for kv in attributes:
        value = kv.value
        # Only the member that is set can be non-empty, so a non-empty string_value is the value.
        out[kv.key] = value.string_value or any_value_to_str(value)
    return out


def _span_error(span: Any) -> str:
    if len(span.trace_id) != 16 or span.trace_id == bytes(16):
        return f"span {span.name!r}: trace_id must be 16 non-zero bytes, got {len(span.trace_id)}"
    if len(span.span_id) != 8 or span.span_id == bytes(8):
        return f"span {span.name!r}: span_id must be 8 non-zero bytes, got {len(span.span_id)}"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return f"span {span.name!r}: parent_span_id must be empty or 8 bytes, got {len(span.parent_span_id)}"
    return ""


_NO_TRACE_ID = bytes(16)
_NO_SPAN_ID = bytes(8)


def spans_from_request(request: ExportTraceServiceRequest) -> Decoded[SpanRecord]:
    """Turn a parsed trace export into rows; invalid spans are counted, not raised.

    The hot loop of ingest, so each protobuf field is read once into a local (every read of a
    bytes or sub-message field builds a new Python object) and the record is built positionally,
    in ``SpanRecord``'s field order: about 20% less time per small span than a helper per span.
    """
    out: Decoded[SpanRecord] = Decoded([])
    append = out.items.append
    for resource_spans in request.resource_spans:
        resource = attributes_to_dict(resource_spans.resource.attributes)
        service = resource.get("service.name", "")
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_name, scope_version = scope.name, scope.version
            for span in scope_spans.spans:
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if (
                    len(trace_id) != 16
                    or len(span_id) != 8
                    or (parent and len(parent) != 8)
                    or trace_id == _NO_TRACE_ID
                    or span_id == _NO_SPAN_ID
                ):
                    out.rejected += 1
                    out.error_message = out.error_message or _span_error(span)
                    continue
                kind = span.kind
                status = span.status
                code = status.code
                events = span.events
                links = span.links
                append(
                    SpanRecord(
                        trace_id.hex(),
                        span_id.hex(),
                        parent.hex(),
                        span.name,
                        SPAN_KINDS[kind] if 0 <= kind < len(SPAN_KINDS) else "Unspecified",
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        service,
                        attributes_to_dict(span.attributes),
                        resource,
                        STATUS_CODES[code] if 0 <= code < len(STATUS_CODES) else "Unset",
                        status.message,
                        span.trace_state,
                        scope_name,
                        scope_version,
                        _events(events) if events else (),
                        _links(links) if links else (),
                    )
                )
    return out


def _events(events: Any) -> tuple[SpanEvent, ...]:
    return tuple(SpanEvent(e.time_unix_nano, e.name, attributes_to_dict(e.attributes)) for e in events)


def _links(links: Any) -> tuple[SpanLink, ...]:
    return tuple(
        SpanLink(link.trace_id.hex(), link.span_id.hex(), link.trace_state, attributes_to_dict(link.attributes))
        for link in links
    )


def logs_from_request(request: ExportLogsServiceRequest) -> Decoded[LogRecord]:
    """Turn a parsed log export into rows; a log's trace context is kept when well-formed."""
    out: Decoded[LogRecord] = Decoded([])
    for resource_logs in request.resource_logs:
        resource = attributes_to_dict(resource_logs.resource.attributes)
        service = resource.get("service.name", "")
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope
            for record in scope_logs.log_records:
                if record.trace_id and len(record.trace_id) != 16 or record.span_id and len(record.span_id) != 8:
                    out.rejected += 1
                    out.error_message = out.error_message or "log record: trace_id/span_id have the wrong length"
                    continue
                attributes = attributes_to_dict(record.attributes)
                out.items.append(
                    LogRecord(
                        time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        event_name=getattr(record, "event_name", "") or attributes.get("event.name", ""),
                        severity_text=record.severity_text,
                        severity_number=int(record.severity_number),
                        body=any_value_to_str(record.body),
                        service_name=service,
                        attributes=attributes,
                        resource_attributes=resource,
                        scope_name=scope.name,
                        scope_version=scope.version,
                    )
                )
    return out


# --- parsing the wire formats -------------------------------------------------------------------


def _parse_json(body: bytes, message: M) -> M:
    parsed: M = parse_otlp_json(body, type(message))
    return parsed


def _parse_protobuf(body: bytes, message: M) -> M:
    try:
        message.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise PermanentError(f"request body is not a valid OTLP protobuf message: {exc}") from None
    return message


def parse_traces(body: bytes, *, json_body: bool) -> ExportTraceServiceRequest:
    """Parse an OTLP trace export request from protobuf or OTLP/JSON bytes."""
    parse: Callable[[bytes, ExportTraceServiceRequest], ExportTraceServiceRequest] = (
        _parse_json if json_body else _parse_protobuf
    )
    return parse(body, ExportTraceServiceRequest())


def parse_logs(body: bytes, *, json_body: bool) -> ExportLogsServiceRequest:
    """Parse an OTLP logs export request from protobuf or OTLP/JSON bytes."""
    parse: Callable[[bytes, ExportLogsServiceRequest], ExportLogsServiceRequest] = (
        _parse_json if json_body else _parse_protobuf
    )
    return parse(body, ExportLogsServiceRequest())
