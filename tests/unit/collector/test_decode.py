from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from spanscore.collector.decode import any_value_to_str, parse_traces, spans_from_request
from spanscore.errors import PermanentError
from spanscore.records import SpanEvent, SpanLink, SpanRecord

T0 = 1_700_000_000 * 10**9  # a storable time: OTLP times before 1970-01-02 are refused
ids = st.binary(min_size=16, max_size=16).filter(lambda b: any(b))
span_ids = st.binary(min_size=8, max_size=8).filter(lambda b: any(b))
scalars = st.one_of(
    st.text(max_size=20).map(lambda s: AnyValue(string_value=s)),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda i: AnyValue(int_value=i)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.floats(allow_nan=False).map(lambda f: AnyValue(double_value=f)),
)


def _request(trace_id: bytes, span_id: bytes, name: str, attributes: dict[str, AnyValue]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    span = (
        request.resource_spans.add()
        .scope_spans.add()
        .spans.add(
            trace_id=trace_id,
            span_id=span_id,
            name=name,
            kind=2,
            start_time_unix_nano=T0 + 5,
            end_time_unix_nano=T0 + 9,
        )
    )
    for key, value in attributes.items():
        kv = span.attributes.add(key=key)
        kv.value.CopyFrom(value)
    return request


@settings(max_examples=150, deadline=None)
@given(ids, span_ids, st.text(max_size=30), st.dictionaries(st.text(max_size=10), scalars, max_size=6))
def test_protobuf_and_json_decode_to_the_same_rows(trace_id, span_id, name, attributes) -> None:
    request = _request(trace_id, span_id, name, attributes)
    from_protobuf = spans_from_request(parse_traces(request.SerializeToString(), json_body=False)).items
    document = json_format.MessageToDict(request)
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"], span["spanId"] = trace_id.hex(), span_id.hex()
    from_json = spans_from_request(parse_traces(json.dumps(document).encode(), json_body=True)).items
    assert from_protobuf == from_json
    assert from_protobuf[0].trace_id == trace_id.hex() and from_protobuf[0].kind == "Server"
    assert from_protobuf[0].attributes == {k: any_value_to_str(v) for k, v in attributes.items()}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash_the_protobuf_decoder(body: bytes) -> None:
    try:
        spans_from_request(parse_traces(body, json_body=False))
    except PermanentError as exc:
        assert "protobuf" in str(exc)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=20,
    )
)
def test_arbitrary_json_never_crashes_the_json_decoder(document: object) -> None:
    try:
        spans_from_request(parse_traces(json.dumps(document).encode(), json_body=True))
    except PermanentError as exc:
        assert str(exc)


def test_wrong_id_lengths_are_rejected_per_span() -> None:
    request = _request(b"\x01" * 16, b"\x02" * 8, "good", {})
    bad = (
        request.resource_spans[0]
        .scope_spans[0]
        .spans.add(
            trace_id=b"\x01" * 15, span_id=b"\x02" * 8, name="bad", start_time_unix_nano=T0, end_time_unix_nano=T0
        )
    )
    assert bad.name == "bad"
    decoded = spans_from_request(request)
    assert [s.name for s in decoded.items] == ["good"]
    assert decoded.rejected == 1 and "trace_id" in decoded.error_message


@pytest.mark.parametrize(("body", "message"), [(b"\xff\xfe", "JSON"), (b'"text"', "JSON object")])
def test_json_errors_are_clear(body: bytes, message: str) -> None:
    with pytest.raises(PermanentError, match=message):
        parse_traces(body, json_body=True)


def test_every_field_of_a_span_lands_in_its_own_place() -> None:
    """Each field gets a value no other field has, so a record built with two fields swapped fails here."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "svc"
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = "scope-name", "scope-version"
    span = scope_spans.spans.add(
        trace_id=bytes(range(1, 17)), span_id=bytes(range(20, 28)), parent_span_id=bytes(range(30, 38)),
        name="span-name", kind=3, start_time_unix_nano=T0 + 11, end_time_unix_nano=T0 + 22, trace_state="ts=state",
    )  # fmt: skip
    span.attributes.add(key="k").value.int_value = 7
    span.status.code, span.status.message = 2, "status-message"
    event = span.events.add(time_unix_nano=T0 + 15, name="event-name")
    event.attributes.add(key="ek").value.string_value = "ev"
    link = span.links.add(trace_id=bytes(range(40, 56)), span_id=bytes(range(60, 68)), trace_state="lts")
    link.attributes.add(key="lk").value.bool_value = True

    (record,) = spans_from_request(request).items

    assert record == SpanRecord(
        trace_id=bytes(range(1, 17)).hex(), span_id=bytes(range(20, 28)).hex(),
        parent_span_id=bytes(range(30, 38)).hex(), name="span-name", kind="Client", start_time_ns=T0 + 11,
        end_time_ns=T0 + 22, service_name="svc", attributes={"k": "7"}, resource_attributes={"service.name": "svc"},
        status_code="Error", status_message="status-message", trace_state="ts=state", scope_name="scope-name",
        scope_version="scope-version", events=(SpanEvent(T0 + 15, "event-name", {"ek": "ev"}),),
        links=(SpanLink(bytes(range(40, 56)).hex(), bytes(range(60, 68)).hex(), "lts", {"lk": "true"}),),
    )  # fmt: skip


any_values = st.recursive(
    scalars | st.binary(max_size=8).map(lambda b: AnyValue(bytes_value=b)),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda vs: AnyValue(array_value={"values": vs}))
        | st.dictionaries(st.text(max_size=5), inner, max_size=3).map(
            lambda d: AnyValue(kvlist_value={"values": [{"key": k, "value": v} for k, v in d.items()]})
        )
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(ids, span_ids, st.text(max_size=10), st.dictionaries(st.text(max_size=6), any_values, max_size=4), st.booleans())
def test_the_json_decoder_builds_what_json_format_builds(trace_id, span_id, name, attributes, snake_case) -> None:
    """orjson + constructors give the same message as protobuf's own JSON parser, field for field."""
    request = _request(trace_id, span_id, name, attributes)
    request.resource_spans[0].scope_spans[0].spans[0].status.code = 2
    document = json_format.MessageToDict(request, preserving_proto_field_name=snake_case)
    expected = ExportTraceServiceRequest()
    json_format.ParseDict(document, expected)
    span = document["resourceSpans" if not snake_case else "resource_spans"][0]
    span = span["scopeSpans" if not snake_case else "scope_spans"][0]["spans"][0]
    for key in ("traceId", "spanId", "trace_id", "span_id"):
        if key in span:
            span[key] = (trace_id if "race" in key else span_id).hex()
    assert parse_traces(json.dumps(document).encode(), json_body=True) == expected


def test_a_refused_span_counts_no_dropped_events() -> None:
    """Drops are counted for kept spans only: a span refused for an event time is refused, not trimmed."""
    from spanscore.collector.bounds import DecodeBounds
    from spanscore.collector.limits_config import LimitsConfig

    request = _request(b"\x01" * 16, b"\x02" * 8, "kept", {})
    spans = request.resource_spans[0].scope_spans[0].spans
    for _ in range(3):
        spans[0].events.add(time_unix_nano=T0)
    refused = spans.add(trace_id=b"\x01" * 16, span_id=b"\x03" * 8, name="refused", start_time_unix_nano=T0)
    refused.end_time_unix_nano = T0
    for _ in range(3):
        refused.events.add(time_unix_nano=0)
    bounds = DecodeBounds(LimitsConfig(max_events_per_span=1))
    decoded = spans_from_request(request, bounds)
    assert [span.name for span in decoded.items] == ["kept"] and len(decoded.items[0].events) == 1
    assert decoded.rejected == 1 and "events[0].time_unix_nano" in decoded.error_message
    assert bounds.dropped.events == 2


def _deep(levels: int) -> AnyValue:
    value = AnyValue(string_value="leaf")
    for _ in range(levels):
        value = AnyValue(array_value={"values": [value]})
    return value


def test_values_nested_too_deep_refuse_their_log_record_or_every_span_of_their_resource() -> None:
    """A log body or resource attribute nested past the limit: refused with the place named, never a crash."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from spanscore.collector.decode import logs_from_request

    logs = ExportLogsServiceRequest()
    records = logs.resource_logs.add().scope_logs.add().log_records
    records.add(time_unix_nano=T0).body.CopyFrom(_deep(40))
    records.add(time_unix_nano=T0).body.CopyFrom(_deep(31))
    decoded = logs_from_request(logs)
    assert decoded.rejected == 1 and "body" in decoded.error_message and "32" in decoded.error_message
    assert len(decoded.items) == 1

    request = _request(b"\x01" * 16, b"\x02" * 8, "a", {})
    request.resource_spans[0].scope_spans[0].spans.add(
        trace_id=b"\x01" * 16, span_id=b"\x03" * 8, name="b", start_time_unix_nano=T0, end_time_unix_nano=T0
    )
    request.resource_spans[0].resource.attributes.add(key="deep").value.CopyFrom(_deep(33))
    spans = spans_from_request(request)
    assert spans.items == [] and spans.rejected == 2 and "resource: attribute 'deep'" in spans.error_message


def test_each_requests_drops_add_up_in_the_service_counters() -> None:
    """One ``Drops`` type counts a decode's drops and sums them per service (#27): every kind is carried over."""
    from spanscore.collector.bounds import DecodeBounds, Drops
    from spanscore.collector.limits import LimitCounters
    from spanscore.collector.limits_config import LimitsConfig

    counters = LimitCounters()
    for _ in range(2):
        request = _request(b"\x01" * 16, b"\x02" * 8, "kept", {})
        span = request.resource_spans[0].scope_spans[0].spans[0]
        for _ in range(3):
            event = span.events.add(time_unix_nano=T0)
            event.attributes.add(key="a").value.string_value = "x"
            event.attributes.add(key="b").value.string_value = "y"
        span.links.add(trace_id=b"\x05" * 16, span_id=b"\x06" * 8)
        span.links.add(trace_id=b"\x05" * 16, span_id=b"\x07" * 8)
        bounds = DecodeBounds(LimitsConfig(max_events_per_span=2, max_links_per_span=1, max_attributes_per_event=1))
        assert len(spans_from_request(request, bounds).items) == 1
        counters.add_decode_drops(bounds)
    assert counters.dropped == Drops(events=2, links=2, attributes=4)
