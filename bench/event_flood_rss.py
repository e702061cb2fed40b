"""Resident memory one span of 1,000,000 events costs (a 2 MB body of empty events), each case in a fresh process.

Run: ``PYTHONPATH=$PWD python -m bench.event_flood_rss``. ``parse`` and ``decode`` call the decoder directly:
the figure is the child's resident set after decoding (or its high-water mark, if higher) minus its resident
set once the body was read. ``service`` posts the body to a started service's OTLP/HTTP receiver (loopback,
embedded store in a temporary folder): the figure is the highest resident set sampled during the export
minus that of the started service. The body is the attack from issue #26: small on the wire, large once every
event became an object. Empty events have no time, which refuses the span (``collector/bounds.py``); events
with a time (an 11 MB body) are kept up to ``collector.limits.max_events_per_span``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

EVENTS = 1_000_000


def flood_body(events: int = EVENTS, timed: bool = False) -> bytes:
    """One well-formed span with ``events`` empty events (or events with only a time), protobuf encoded."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="flood",
        start_time_unix_nano=1_700_000_000 * 10**9, end_time_unix_nano=1_700_000_001 * 10**9,
    )  # fmt: skip
    span.events.add(time_unix_nano=1_700_000_000 * 10**9 if timed else 0)
    one = span.SerializeToString()
    span.ClearField("events")
    head = span.SerializeToString()
    event_field = one[len(head) :]  # the bytes one empty event adds: tag and zero length
    # Rebuild with the events appended to the span message by hand: fast, and exactly what a client could send.
    request.resource_spans[0].scope_spans[0].spans[0].MergeFromString(event_field * events)
    return bytes(request.SerializeToString())


def _rss_kb() -> int:
    """Resident set now, in KiB (Linux): what the decoded objects still hold, unlike the high-water mark."""
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def _through_service(body: bytes) -> None:
    """The whole path: a started service (embedded store), the body posted to its OTLP/HTTP receiver.

    Resident set is sampled every 5 ms from just before the post until the stored answer; the figure is the
    highest sample minus the resident set of the started, warmed-up service.
    """
    import asyncio
    import tempfile
    import threading

    import aiohttp

    from spanscore.config import load_config
    from spanscore.server.service import Service

    async def run(folder: str) -> dict[str, object]:
        config = load_config(None, environ={})
        config.storage.dsn = f"chdb://{folder}/chdb"
        config.storage.spool_dir = f"{folder}/spool"
        config.storage.acknowledge = "stored"
        config.collector.grpc.enabled = False
        config.collector.http.port = config.api.port = 0
        service = Service(config)
        await service.start()
        try:
            assert service.http is not None
            url = f"http://127.0.0.1:{service.http.port}/v1/traces"
            headers = {"Content-Type": "application/x-protobuf"}
            async with aiohttp.ClientSession() as session:
                async with session.post(url, data=flood_body(10, timed=True), headers=headers) as warm:
                    await warm.read()
                baseline, peak, done = _rss_kb(), [0], threading.Event()

                def sample() -> None:
                    while not done.wait(0.005):
                        peak[0] = max(peak[0], _rss_kb())

                sampler = threading.Thread(target=sample, daemon=True)
                sampler.start()
                async with session.post(url, data=body, headers=headers) as response:
                    answer = await response.read()
                done.set()
                sampler.join()
            growth = (max(peak[0], _rss_kb()) - baseline) / 1024
            dropped = service.metrics().get("span_events_dropped", 0)
            return {"status": response.status, "rss_growth_mb": round(growth, 1), "answer": answer[:120].decode(
                "utf-8", "replace"), "span_events_dropped": dropped}  # fmt: skip
        finally:
            await service.shutdown()

    with tempfile.TemporaryDirectory() as folder:
        result = asyncio.run(run(folder))
    print(json.dumps({"stage": "service", "body_bytes": len(body), **result}))


def _child(stage: str) -> None:
    from spanscore.collector.decode import parse_traces, spans_from_request
    from spanscore.collector.limits import LimitCounters, LimitsConfig, apply_limits

    body = sys.stdin.buffer.read()
    if stage == "service":
        _through_service(body)
        return
    before = _rss_kb()
    request = parse_traces(body, json_body=False)
    kept = rejected = 0
    if stage == "decode":
        decoded = spans_from_request(request)
        spans = apply_limits(decoded.items, LimitsConfig(), LimitCounters())
        kept, rejected = (len(spans[0].events) if spans else 0), decoded.rejected
    growth = (max(_rss_kb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) - before) / 1024
    print(json.dumps({"stage": stage, "body_bytes": len(body), "rss_growth_mb": round(growth, 1), "events_kept": kept,
                      "spans_rejected": rejected}))  # fmt: skip


def main() -> None:
    if len(sys.argv) > 1:
        _child(sys.argv[1])
        return
    for timed in (False, True):
        body = flood_body(timed=timed)  # built here: building it costs memory the child must not count
        for stage in ("parse", "decode", "service"):
            command = [sys.executable, "-m", "bench.event_flood_rss", stage]
            out = subprocess.run(command, input=body, capture_output=True, check=True)
            print(("timed events  " if timed else "empty events  ") + out.stdout.decode().strip())


if __name__ == "__main__":
    main()
