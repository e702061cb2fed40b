"""A large export decoded a piece at a time yields exactly the rows of the whole, and refuses dense items alone."""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from spanscore.collector.decode import logs_from_request, parse_logs, parse_traces, spans_from_request
from spanscore.collector.export_chunks import CHUNK_BYTES, split_export

BASE_NS = 1_700_000_000 * 10**9


def _traces() -> ExportTraceServiceRequest:
    """Three resources of two scopes each, 3 MB in all, with ids, events, links and attributes."""
    request = ExportTraceServiceRequest()
    number = 0
    for resource in range(3):
        group = request.resource_spans.add(schema_url=f"r{resource}")
        group.resource.attributes.add(key="service.name").value.string_value = f"svc-{resource}"
        for scope in range(2):
            scope_group = group.scope_spans.add()
            scope_group.scope.name, scope_group.scope.version = f"scope-{scope}", "1"
            for _ in range(250):
                number += 1
                span = scope_group.spans.add(
                    trace_id=number.to_bytes(16, "big"), span_id=number.to_bytes(8, "big"), name=f"s{number}",
                    start_time_unix_nano=BASE_NS, end_time_unix_nano=BASE_NS + number,
                )  # fmt: skip
                span.attributes.add(key="text").value.string_value = "x" * 2000
                span.events.add(time_unix_nano=BASE_NS, name="e").attributes.add(key="k").value.int_value = number
                span.links.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    return request


def test_pieces_decode_to_the_rows_of_the_whole_request() -> None:
    body = _traces().SerializeToString()
    split = split_export(body, ExportTraceServiceRequest.DESCRIPTOR)
    assert split is not None and len(split.pieces) >= 3 and split.rejected == 0
    assert all(len(piece) <= CHUNK_BYTES + 64 << 10 for piece in split.pieces)
    pieces = [row for piece in split.pieces for row in spans_from_request(parse_traces(piece, json_body=False)).items]
    assert pieces == spans_from_request(parse_traces(body, json_body=False)).items


def test_log_pieces_decode_to_the_rows_of_the_whole_request() -> None:
    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    for number in range(1, 1500):
        records.add(time_unix_nano=BASE_NS + number).body.string_value = "y" * 1000
    body = request.SerializeToString()
    split = split_export(body, ExportLogsServiceRequest.DESCRIPTOR)
    assert split is not None and len(split.pieces) >= 2
    pieces = [row for piece in split.pieces for row in logs_from_request(parse_logs(piece, json_body=False)).items]
    assert pieces == logs_from_request(parse_logs(body, json_body=False)).items


def test_a_dense_span_is_refused_alone_and_a_small_body_is_not_split() -> None:
    request = _traces()
    dense = request.resource_spans[1].scope_spans[0].spans[3]  # the 504th span
    event = Span(events=[Span.Event()]).SerializeToString()  # one empty event: a tag and a zero length
    dense.MergeFromString(event * 700_000)  # 1.4 MB of empty events
    body = request.SerializeToString()
    split = split_export(body, ExportTraceServiceRequest.DESCRIPTOR)
    assert split is not None and split.rejected == 1
    assert "protobuf messages" in split.error_message and "span of" in split.error_message
    kept = [row for piece in split.pieces for row in spans_from_request(parse_traces(piece, json_body=False)).items]
    assert len(kept) == 1499 and "s504" not in {row.name for row in kept}
    assert split_export(b"\x0a\x00" * 1000, ExportTraceServiceRequest.DESCRIPTOR) is None
