"""``python -m bench.stored_rows [--http] [--regenerate] [--golden PATH] [--out PATH] [--serve-root DIR]``.

Nothing stored may change when the write path changes (#43). This sends every recorded framework fixture
(tests/fixtures/traces: each ``*.traces.json``, ``*.logs.json`` and ``*.metrics.json``, the last recorded by
``tests/fixtures/record_metrics.py``; as protobuf over gRPC, one export at a time,
each acknowledged once stored) through a real ``spanscore serve``, stops it with SIGTERM, opens its store and
dumps every row of every intake table (``spanscore.storage.reads.row_dump``), with each export's answer (how
many items were refused and why) in front. The dump is compared with the golden one checked into the repo;
any difference is printed and the command exits 1. ``--regenerate`` writes the golden instead (only when the
change is meant to change what is stored); ``--serve-root DIR`` runs the service from an exported older tree.
``--http`` sends the recorded OTLP/JSON bodies as they are over HTTP instead: the other decode route, which must
store the same rows and give the same answers, so it is compared with the same golden.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import urllib.request
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from bench.service import HANG_TIMEOUT_S, ServiceProcess, temp_workdir
from spanscore.collector.otlp_json import otlp_json_to_protobuf
from spanscore.storage.connection import connect
from spanscore.storage.reads.row_dump import dump_intake

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "traces"
GOLDEN = REPO / "tests" / "fixtures" / "stored_rows.golden"
DATABASE = "spanscore"
METHODS: dict[str, tuple[str, Any]] = {
    "traces": ("/opentelemetry.proto.collector.trace.v1.TraceService/Export", ExportTraceServiceResponse),
    "logs": ("/opentelemetry.proto.collector.logs.v1.LogsService/Export", ExportLogsServiceResponse),
    "metrics": ("/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", ExportMetricsServiceResponse),
}
REJECTED = {"traces": "rejected_spans", "logs": "rejected_log_records", "metrics": "rejected_data_points"}


def fixture_files() -> list[tuple[str, Path]]:
    """Every recorded export, as (signal, path), in a fixed order (node_modules left out)."""
    found = [
        (signal, path)
        for signal in METHODS
        for path in FIXTURES.rglob(f"*.{signal}.json")
        if "node_modules" not in path.parts
    ]
    return sorted(found, key=lambda item: (item[1].relative_to(FIXTURES).as_posix(), item[0]))


def _answer_line(path: Path, signal: str, refused: Any) -> bytes:
    name = path.relative_to(FIXTURES).as_posix()
    return f"{name}: rejected={getattr(refused, REJECTED[signal])} {refused.error_message!r}".encode()


def _send_grpc(port: int) -> list[bytes]:
    """Export each fixture as protobuf over gRPC and wait for its answer (one insert per export)."""
    lines = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        for signal, path in fixture_files():
            method, response_type = METHODS[signal]
            call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
            body = otlp_json_to_protobuf(path.read_bytes(), signal)
            response = response_type.FromString(call(body, timeout=HANG_TIMEOUT_S))
            lines.append(_answer_line(path, signal, response.partial_success))
    return lines


def _send_http(port: int) -> list[bytes]:
    """Export each fixture's OTLP/JSON bytes as recorded over HTTP and wait for its answer."""
    lines = []
    for signal, path in fixture_files():
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/{signal}", data=path.read_bytes(), method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=HANG_TIMEOUT_S) as answer:
            response = json_format.Parse(answer.read(), METHODS[signal][1]())
        lines.append(_answer_line(path, signal, response.partial_success))
    return lines


def _send_all(port: int, http: bool) -> bytes:
    """Every fixture, one export at a time, each answered before the next: the same inserts every time."""
    header = b"## exports: fixture, accepted or refused (rejected count and message)"
    return b"\n".join([header, *(_send_http(port) if http else _send_grpc(port))]) + b"\n"


def stored_dump(serve_root: Path | None, http: bool = False) -> bytes:
    """The exports' answers and every stored intake row, from a fresh service on a fresh store."""
    with temp_workdir("stored-rows") as workdir:
        env = {"PYTHONPATH": str(serve_root.resolve())} if serve_root is not None else None
        service = ServiceProcess(Path(workdir), {"storage": {"database": DATABASE}}, env=env)
        with service:
            answers = _send_all(service.http_port if http else service.grpc_port, http)
        if service.process is None or service.process.returncode != 0:
            code = None if service.process is None else service.process.returncode
            raise SystemExit(f"spanscore serve did not stop cleanly ({code}): {service.log_tail()}")
        dsn = f"chdb:///{(Path(workdir) / 'data').resolve().as_posix().lstrip('/')}"
        client = connect(dsn, DATABASE)
        try:
            return answers + dump_intake(client, DATABASE)
        finally:
            client.close()


def compare(dump: bytes, golden: bytes, limit: int = 60) -> list[str]:
    """The first ``limit`` lines of a unified diff between the golden dump and this one (empty: identical)."""
    if dump == golden:
        return []
    diff = difflib.unified_diff(
        golden.decode(errors="replace").splitlines(),
        dump.decode(errors="replace").splitlines(),
        "golden",
        "stored now",
        lineterm="",
        n=0,
    )
    shown = [line[:400] for _, line in zip(range(limit), diff, strict=False)]
    return shown or ["the dumps differ in bytes that are not shown as text (encoding)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stored_rows", description=__doc__.split("\n\n")[1])
    parser.add_argument("--golden", type=Path, default=GOLDEN, help="the golden dump (default: %(default)s)")
    parser.add_argument("--regenerate", action="store_true", help="write the golden dump instead of comparing")
    parser.add_argument("--out", type=Path, help="also write this run's dump here")
    parser.add_argument("--serve-root", type=Path, help="run the service from this exported tree")
    parser.add_argument("--http", action="store_true", help="send the OTLP/JSON bodies over HTTP, not gRPC")
    args = parser.parse_args(argv)
    dump = stored_dump(args.serve_root, args.http)
    lines = dump.count(b"\n")
    if args.out is not None:
        args.out.write_bytes(dump)
    if args.regenerate:
        args.golden.write_bytes(dump)
        print(f"wrote {args.golden} ({lines} lines)")
        return 0
    if not args.golden.exists():
        print(f"no golden dump at {args.golden}: run with --regenerate on the reference code", file=sys.stderr)
        return 2
    differences = compare(dump, args.golden.read_bytes())
    if differences:
        print("stored rows differ from the golden dump:", *differences, sep="\n", file=sys.stderr)
        return 1
    print(f"stored rows identical to {args.golden} ({lines} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
