"""Memory a real `spanscore serve` spends per byte of an OTLP export, hostile and ordinary (issue #37, item 4).

Run: ``PYTHONPATH=$PWD python -m bench.decode_amplification [--case NAME ...]``. Each case starts a fresh
service (``bench.service.ServiceProcess``, embedded store), posts one body to its OTLP/HTTP receiver and prints
one JSON line: the answer, the seconds, and the peak growth of the service's resident memory (its process tree,
the OTLP/JSON worker included, sampled every 10 ms by ``bench.rss_tree``) over the started service, also per
byte of the body as sent and as decompressed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from bench.decode_stall import otlp_json
from bench.payloads import build_request
from bench.rss_tree import peak_growth
from bench.service import ServiceProcess, temp_workdir

BASE_NS = 1_700_000_000 * 10**9
EMPTY_EVENT = Span(events=[Span.Event()]).SerializeToString()
"""One empty span event on the wire: a tag and a zero length."""


def _framed(number: int, payload: bytes) -> bytes:
    """``payload`` as length-delimited field ``number``: how a client could write it, without building messages."""
    out = bytearray()
    for value in (number << 3 | 2, len(payload)):
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out) + payload


def _request(spans: list[bytes]) -> bytes:
    scope = _framed(2, b"".join(_framed(2, span) for span in spans))
    return _framed(1, scope)


def _span(number: int, events: bytes) -> bytes:
    head = Span(
        trace_id=b"\x09" * 16, span_id=number.to_bytes(8, "big"), name="dense",
        start_time_unix_nano=BASE_NS, end_time_unix_nano=BASE_NS + 1,
    ).SerializeToString()  # fmt: skip
    return head + events


def dense_spans(spans: int, events: int) -> bytes:
    """``spans`` valid spans, each followed by ``events`` empty events (2 bytes each)."""
    return _request([_span(number, EMPTY_EVENT * events) for number in range(1, spans + 1)])


def timed_events(events: int) -> bytes:
    """One span of ``events`` events that carry only a time (about 11 bytes each): dense, yet allowed."""
    return _request([_span(1, Span(events=[Span.Event(time_unix_nano=BASE_NS)]).SerializeToString() * events)])


def empty_events_json(size: int) -> bytes:
    """About ``size`` bytes of OTLP/JSON: one span whose events are ``{}``."""
    span = {"traceId": "09" * 16, "spanId": "00000000000000aa", "name": "dense",
            "startTimeUnixNano": str(BASE_NS), "endTimeUnixNano": str(BASE_NS + 1), "events": ["HOLE"]}  # fmt: skip
    head = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    before, after = head.split('"HOLE"')
    return (before + ",".join(["{}"] * ((size - len(head)) // 3)) + after).encode()


def _encoded(spans: int, llm: bool) -> bytes:
    """Ordinary agent spans (``bench.payloads``): small ones, or LLM calls of about 5 KB."""
    return bytes(build_request(spans, llm)[0].SerializeToString())


CASES: dict[str, tuple[str, Callable[[], bytes], bool]] = {
    # name: (media type, body, gzip)
    "pb_empty_events_2mb": ("application/x-protobuf", lambda: dense_spans(1, 1_000_000), False),
    "pb_empty_events_16mb": ("application/x-protobuf", lambda: dense_spans(1, 8_000_000), False),
    "pb_dense_small_spans_16mb": ("application/x-protobuf", lambda: dense_spans(20_000, 400), False),
    "pb_timed_events_11mb": ("application/x-protobuf", lambda: timed_events(1_000_000), False),
    "pb_small_spans_4mb": ("application/x-protobuf", lambda: _encoded(30_000, llm=False), False),
    "pb_llm_spans_16mb": ("application/x-protobuf", lambda: _encoded(3_000, llm=True), False),
    "json_empty_events_8mb_gzip": ("application/json", lambda: empty_events_json(8 << 20), True),
    "json_small_spans_8mb": ("application/json", lambda: otlp_json(build_request(20_000, False)[0]), False),
}


def _post(port: int, body: bytes, media: str, gzipped: bool) -> tuple[int, str]:
    headers = {"Content-Type": media, **({"Content-Encoding": "gzip"} if gzipped else {})}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return response.status, response.read()[:300].decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read()[:300].decode("utf-8", "replace")


def run_case(name: str) -> dict[str, Any]:
    media, build, gzipped = CASES[name]
    raw = bytes(build())
    body = gzip.compress(raw, 6) if gzipped else raw
    with temp_workdir("spanscore-bench-amplification-") as workdir, ServiceProcess(Path(workdir)) as service:
        assert service.process is not None
        time.sleep(1.0)  # let start-up settle before the baseline
        started = time.perf_counter()
        with peak_growth(service.process.pid) as peak:
            status, answer = _post(service.http_port, body, media, gzipped)
        seconds = time.perf_counter() - started
    return {
        "case": name, "body_bytes": len(body), "decoded_body_bytes": len(raw), "status": status,
        "seconds": round(seconds, 2), "peak_growth_mib": peak.growth_mib,
        "mib_per_mib_decompressed": round(peak.growth_mib * (1 << 20) / len(raw), 1), "answer": answer[:160],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    args = parser.parse_args()
    for name in args.case or list(CASES):
        print(json.dumps(run_case(name)), flush=True)


if __name__ == "__main__":
    main()
