"""Peak RSS of decoding one span that carries 1,000,000 empty events (a 2 MB body), in a fresh process.

Run: ``PYTHONPATH=$PWD python -m bench.event_flood_rss``. Each case runs in its own child process, so the
figures are the child's peak resident set (``ru_maxrss``) minus its resident set before the body was decoded.
The body is the attack from issue #26: small on the wire, large once every event became an object.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

EVENTS = 1_000_000


def flood_body(events: int = EVENTS) -> bytes:
    """One well-formed span with ``events`` empty events, protobuf encoded."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="flood",
        start_time_unix_nano=1_700_000_000 * 10**9, end_time_unix_nano=1_700_000_001 * 10**9,
    )  # fmt: skip
    span.events.add()
    one = span.SerializeToString()
    span.ClearField("events")
    head = span.SerializeToString()
    event_field = one[len(head) :]  # the bytes one empty event adds: tag and zero length
    # Rebuild with the events appended to the span message by hand: fast, and exactly what a client could send.
    request.resource_spans[0].scope_spans[0].spans[0].MergeFromString(event_field * events)
    return bytes(request.SerializeToString())


def _child(stage: str) -> None:
    from spanscore.collector.decode import parse_traces, spans_from_request
    from spanscore.collector.limits import LimitCounters, LimitsConfig, apply_limits

    body = sys.stdin.buffer.read()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    request = parse_traces(body, json_body=False)
    kept = 0
    if stage == "decode":
        spans = apply_limits(spans_from_request(request).items, LimitsConfig(), LimitCounters())
        kept = len(spans[0].events) if spans else 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"stage": stage, "body_bytes": len(body), "rss_growth_mb": (peak - before) / 1024, "kept": kept}))


def main() -> None:
    if len(sys.argv) > 1:
        _child(sys.argv[1])
        return
    body = flood_body()  # built here: building it costs memory the child must not count
    for stage in ("parse", "decode"):
        command = [sys.executable, "-m", "bench.event_flood_rss", stage]
        out = subprocess.run(command, input=body, capture_output=True, check=True)
        print(out.stdout.decode().strip())


if __name__ == "__main__":
    main()
