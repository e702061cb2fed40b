"""Nothing stored changes (#43): every recorded fixture through a real ``spanscore serve``, dumped and compared.

``bench.stored_rows`` sends each recorded export over gRPC, stops the service, dumps every intake table's rows
and compares the dump with tests/fixtures/stored_rows.golden byte for byte. A change meant to alter what is
stored regenerates the golden with ``python -m bench.stored_rows --regenerate`` and shows the diff in review.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.stored_rows import GOLDEN, compare

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("route", ["grpc", "http"])
def test_the_recorded_fixtures_are_stored_exactly_as_the_golden_dump(tmp_path: Path, route: str) -> None:
    """Protobuf over gRPC and the recorded OTLP/JSON over HTTP: both decode routes store the golden rows."""
    out = tmp_path / "dump"
    command = [sys.executable, "-m", "bench.stored_rows", "--out", str(out), *(["--http"] if route == "http" else [])]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-6000:]
    dump = out.read_bytes()
    for table in (b"otel_traces", b"otel_logs", b"otel_metrics_histogram", b"genai_usage_1m"):
        assert b"## " + table + b" (0 rows)" not in dump, f"nothing stored in {table.decode()}"


def test_one_changed_stored_value_is_a_difference() -> None:
    """The comparison sees a single changed character in one stored row (the golden is what main stored)."""
    golden = GOLDEN.read_bytes()
    start = golden.index(b"## otel_traces (")
    row = golden.index(b'"SpanId":"', start) + len(b'"SpanId":"')
    changed = golden[:row] + (b"0" if golden[row : row + 1] != b"0" else b"1") + golden[row + 1 :]
    differences = compare(golden, changed)
    assert any(line.startswith("-") and "SpanId" in line for line in differences), differences
    assert compare(golden, golden) == []
