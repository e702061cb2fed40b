"""The benchmark suite in its smallest form runs end to end and produces numbers.

Only that: benchmarks are not tests, so no timing is asserted. It writes to a
temp file, never to docs/benchmarks.md.

A slow machine must not fail it, only a hang: the run takes a minute or two
on a loaded 2-core machine (several times that when other suites saturate it)
and gets ``RUN_TIMEOUT_S``; inside, every wait for the service is bounded by
``bench.service.HANG_TIMEOUT_S``, and the probes keep going until they have a
sample (a probe that timed out is a figure, not an error).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 1200.0
"""Only a hung suite takes this long; pytest's own timeout for the test is set above it."""


def run_smoke(out: Path, raw: Path) -> None:
    """``python -m bench.run --quick --smoke``; on a hang, stop it with the services it started."""
    command = [sys.executable, "-m", "bench.run", "--quick", "--smoke", "--out", str(out), "--json", str(raw)]
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True)
    try:
        returncode = process.wait(timeout=RUN_TIMEOUT_S)
    except BaseException as exc:  # hung, or the test run interrupted: stop it and every service it started
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            pytest.fail(f"bench.run --smoke hung: still running after {RUN_TIMEOUT_S:.0f} s (its log is above)")
        raise
    assert returncode == 0, f"bench.run --smoke exited with {returncode} (its log is above)"


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 300)
def test_smoke_run_produces_positive_figures(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    raw = tmp_path / "benchmarks.json"
    run_smoke(out, raw)
    results = json.loads(raw.read_text())
    assert out.read_text().startswith("# Benchmarks")
    assert results["ingest"], "no ingest case ran"
    for case in results["ingest"]:
        for run in case["runs"]:
            assert run["spans_per_s"] > 0, case["transport"]
            assert run["ack_p99_ms"] > 0, case["transport"]
        assert case["peak_rss_bytes"] > 0
        assert case["stored_spans"] > 0
    assert results["backfill"]["live_runs_per_s"] > 0 and results["backfill"]["backfill_runs_per_s"] > 0
    assert "## 7. Live scoring and backfill" in out.read_text()
    for stage in ("decode", "insert"):
        assert all(run["spans_per_s"] > 0 for entry in results["limits"][stage] for run in entry["runs"]), stage
    assert results["freshness"]["latencies_s"] and all(value > 0 for value in results["freshness"]["latencies_s"])
    scoring = results["scoring_latency"]
    assert scoring["latencies_s"] and all(value > 0 for value in scoring["latencies_s"])
    assert scoring["background_spans_acked"] > 0
    assert "## 4. Run complete -> code-scorer score queryable" in out.read_text()
    queries = results["queries"]
    assert [step["scores"] for step in queries["steps"]] == [20_000, 50_000]
    for step in [*queries["steps"], queries["merged"]]:
        assert step["agree"], step["scores"]  # the engine-side seeding filled the roll-ups through the views
        assert all(query["p50_ms"] > 0 for query in step["queries"].values()), step["queries"]
    assert "## 5. Hourly score series for one scorer over 7 days" in out.read_text()
    growth = results["growth"]
    assert [step["seeded_spans"] for step in growth["steps"]] == [20_000, 40_000]
    for step in growth["steps"]:
        # The store holds the seeded spans plus what the timed runs ingested, and the lookup found its trace.
        assert step["store"]["rows"] > step["seeded_spans"], step
        assert all(run["spans_per_s"] > 0 for run in step["runs"]) and step["lookup_ms"] > 0
        assert step["lookup_found"], "the timed trace lookups did not find their seeded traces"
    assert "## 6. Ingest as the span store grows" in out.read_text()
