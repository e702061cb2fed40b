"""``python -m bench.fleet`` in its smallest form runs end to end from the package alone, and reports truthfully.

A smoke run only (two replicas, four sessions, the kill scenario): the figures that count come from the full
run in docs/benchmarks.md. The bench waits on conditions (every session scored with all its turns, then no
new score for a quiet period), never on fixed times, so a loaded machine makes it slower, not different.
What a fault breaks today is the fleet's business (issue #36), not the smoke's: it checks that the bench's
verdict follows from what it measured, and the promises no fault may break (nothing acknowledged lost,
the judge budget, one notification per alert transition).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.zookeeper import missing_reason

REPO = Path(__file__).resolve().parents[2]


def test_the_fleet_bench_runs_without_the_tests_and_reports_what_it_measured(tmp_path: Path) -> None:
    reason = missing_reason()
    if reason is not None:
        pytest.skip(f"the fleet simulation needs ZooKeeper: {reason}")
    # From a copy of bench/ and deploy/clickhouse only: tests/ is not importable, as after `pip install -e .`.
    for part in ("bench", "deploy/clickhouse"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "bench.fleet", "--replicas", "2", "--sessions", "4", "--turns", "2"]
    command += ["--limit-calls", "5", "--quiet", "2", "--scenarios", "kill", "--json"]
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=900)
    assert done.stdout.strip(), done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])["scenarios"]["kill"]
    assert "error" not in result, result
    sessions = result["sessions"]
    assert sessions["sent"] == 4
    assert sessions["with_all_turns_never_repeated"] + sessions["without_all_turns"] <= 4
    assert result["acknowledged_lost"] == 0
    assert 0 < result["judge"]["calls"] == sum(result["judge"]["per_replica"].values())
    assert result["judge"]["calls"] <= result["judge"]["limit_calls"]
    assert result["alerts"]["notifications"] == result["alerts"]["transitions"] == 2
    kept = (
        sessions["with_all_turns_never_repeated"] == 4
        and result["runs_judged_more_than_once"] == 0
        and result["judge"]["calls"] <= result["judge"]["limit_calls"]
    )
    assert result["kept_every_promise"] == kept
    assert done.returncode == (0 if kept else 1)
