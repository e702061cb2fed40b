"""What a fleet replica's scoring claims cost the store: each read and write, at a day's volume of rows.

A fleet replica makes these store calls on top of a single process's (``scoring.fleet_claims``):

- ``taken``: before deciding a round of ready runs, one read of the claims and scores of their keys;
- ``claim``: before the judge calls, one insert of a claim per run or session, then one read back;
- ``covered`` and ``scoring_elsewhere``: before a session is scored, and in each turn poll and member change,
  the recorded scorings of the sessions, and the claims since their latest score.

Each is timed here against an embedded store (the same engine a server runs) holding ``--claims`` claims and
``--scores`` scores, as a day of a busy fleet would, with three replicas beating. Wall time per call, and the
process's CPU per call (the engine runs in this process), median and p95 over ``--repeat`` calls per size.

    python -m bench.claim_reads --claims 200000 --scores 1000000 --repeat 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from spanscore.fleet.coordinator import Fleet
from spanscore.scoring.fleet_claims import FleetClaims
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.fleet_heartbeats import beat

SIZES = (1, 20, 200, 2000)
"""Keys per call: one run; a dispatch round at a few hundred runs/s; a burst; a backlog after an outage."""


def _fill(store: ClickHouseStore, claims: int, scores: int) -> None:
    """A day's rows in one statement each: claims on runs (and one session in ten), and their scores."""
    database = store.database
    client = cast(Any, store).client
    client.command(
        f"INSERT INTO {database}.scoring_claims (At, TraceId, RunId, Replica, Instance, Session, Epoch)"
        " SELECT now64(3) - toIntervalMillisecond(number % 86400000),"
        " if(number % 10 = 0, '', lower(hex(MD5(toString(number))))),"
        " if(number % 10 = 0, concat('conv-', toString(number)), concat('run-', toString(number))),"
        " concat('r', toString(number % 3)), concat('r', toString(number % 3), '-1'), 1, 1"
        f" FROM numbers({claims})"
    )
    client.command(
        f"INSERT INTO {database}.scores (Timestamp, TraceId, RunId, Rule, Scorer, Target, Score)"
        " SELECT now64(9) - toIntervalMillisecond(number % 86400000),"
        " if(number % 10 = 0, '', lower(hex(MD5(toString(number))))),"
        " if(number % 10 = 0, concat('conv-', toString(number)), concat('run-', toString(number))),"
        " 'judged', 'toxicity', if(number % 10 = 0, 'session', 'run'), 0.5"
        f" FROM numbers({scores})"
    )
    client.command(  # each session's scoring record (the turns it covered), one per session claim
        f"INSERT INTO {database}.scored_runs (Timestamp, TraceId, RunId, Target, SessionId, Run)"
        " SELECT now64(9) - toIntervalMillisecond(number % 86400000), '', concat('conv-', toString(number)),"
        " 'session', concat('conv-', toString(number)),"
        ' concat(\'{"turns": ["t1", "t2", "t3"], "replica": "r\', toString(number % 3),'
        ' \'", "instance": "r\', toString(number % 3), \'-1"}\')'
        f" FROM numbers({claims}) WHERE number % 10 = 0"
    )
    for replica in ("r0", "r1", "r2"):
        beat(cast(Any, store), replica, f"{replica}-1", joined=True)


def _claims(store: ClickHouseStore) -> FleetClaims:
    fence = SimpleNamespace(token=lambda: None)
    fleet = cast(Fleet, SimpleNamespace(members=lambda: ["r0", "r1", "r2"], replica="r0", fence=fence))
    return FleetClaims(cast(Any, store), fleet, instance="r0-1", alive_window_s=30.0)


def _time(call: Callable[[], object], repeat: int) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    walls.sort()
    cpus.sort()
    p95 = max(0, round(0.95 * len(walls)) - 1)
    return {
        "wall_ms_median": round(statistics.median(walls), 2),
        "wall_ms_p95": round(walls[p95], 2),
        "cpu_ms_median": round(statistics.median(cpus), 2),
    }


def run(claims: int, scores: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="spanscore-claims-") as directory:
        store = ClickHouseStore(f"chdb://{directory}", "claims_bench")
        store.open()
        try:
            _fill(store, claims, scores)
            fleet_claims = _claims(store)
            results: dict[str, Any] = {"claims": claims, "scores": scores, "repeat": repeat, "calls": {}}
            for size in SIZES:
                # Half the keys claimed and scored already (every 10th number is a session, so step past them).
                runs = [(f"{n:x}", f"run-{n}") for n in range(1, 2 * size * 10, 10)][:size]
                stored = [(_trace(n), f"run-{n}") for n in range(1, claims, max(1, claims // size))][: size // 2]
                keys = stored + runs[: size - len(stored)]
                sessions = [f"conv-{n}" for n in range(0, 10 * size, 10)]
                calls = {
                    "taken (before deciding)": lambda keys=keys: fleet_claims.taken(keys),
                    "claim (insert + read back)": lambda runs=runs: fleet_claims.claim(runs),
                    "covered (session records)": lambda sessions=sessions: fleet_claims.covered(sessions),
                    "scoring_elsewhere (session claims)": lambda sessions=sessions: fleet_claims.scoring_elsewhere(
                        sessions
                    ),
                }
                for name, call in calls.items():
                    results["calls"].setdefault(name, {})[size] = _time(call, repeat)
                # That the reads meet stored rows: how many of the keys the store knows a claim or score of.
                results.setdefault("found", {})[size] = {
                    "taken": len(fleet_claims.taken(keys)),
                    "covered": len(fleet_claims.covered(sessions)),
                }
                print(f"{size} keys: done", file=sys.stderr, flush=True)
            return results
        finally:
            store.close()


def _trace(number: int) -> str:
    import hashlib

    return hashlib.md5(str(number).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.claim_reads", description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=200_000)
    parser.add_argument("--scores", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    result = run(args.claims, args.scores, args.repeat)
    for name, sizes in result["calls"].items():
        cells = ", ".join(
            f"{size}: {v['wall_ms_median']} ms (p95 {v['wall_ms_p95']}, cpu {v['cpu_ms_median']})"
            for size, v in sizes.items()
        )
        print(f"{name}: {cells}", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
