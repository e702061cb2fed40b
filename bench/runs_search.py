"""What a runs-list search costs on a full store (issue #40 item 7): the dashboard's /api/v1/dashboard/runs reads.

The bench opens an embedded store, fills one window with ``--runs`` runs (a decision, a score and a stored
scored run of about ``--text-bytes`` characters each), then runs each search of ``SEARCHES`` ``--repeat``
times through ``search_runs``, the function the endpoint calls, on the dashboard's read-only reader with its
limits. It prints, per search, the slowest time and the runs found on the first page. A text search reads the
newest ``TEXT_SCAN_RUNS`` scored runs only, so its cost stops growing with the store past that many.

    python -m bench.runs_search --runs 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time

import orjson

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.runs_list import TEXT_SCAN_RUNS, RunSearch, search_runs
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow, score_id

SEARCHES = {
    "newest page": RunSearch(since_s=86400),
    "worst page": RunSearch(since_s=86400, sort="worst"),
    "session": RunSearch(since_s=86400, session="s-00042"),
    "scorer failed": RunSearch(since_s=86400, scorer="faithfulness", outcome="fail"),
    "text, found": RunSearch(since_s=86400, text="ticket-0000007"),
    "text, not found": RunSearch(since_s=86400, text="no such words anywhere"),
}


def _rows(index: int, now_ns: int, text_bytes: int) -> tuple[ScoreRow, DecisionRow, ScoredRunRow]:
    trace, span, at = f"{index + 1:032x}", f"{index + 1:016x}", now_ns - index * 10**9
    filler = ("lorem ipsum dolor sit amet " * (text_bytes // 27 + 1))[:text_bytes]
    score = ScoreRow(
        score_id=score_id("r", "faithfulness", "1", trace, span), run_timestamp_ns=at, trace_id=trace, span_id=span,
        run_id=f"run-{index}", service_name="svc", agent_name="agent", model="m", session_id=f"s-{index % 1000:05d}",
        user_id=f"u-{index % 97}", rule="r", scorer="faithfulness", scorer_version="1", score=(index % 10) / 10,
        label="pass" if index % 10 >= 5 else "fail", reason="", status="ok", error="", sample_rate=1.0,
        higher_is_better=True, judge_model="", input_tokens=0, output_tokens=0, cost_usd=0.0, duration_ms=1.0,
        ready_reason="root_ended", run_duration_ms=10.0, run_error="",
    )  # fmt: skip
    decision = DecisionRow(at, trace, span, f"run-{index}", "svc", "agent", "r", "sampled", 1.0, "", "root_ended")
    view = {"run_id": f"run-{index}", "input": [{"role": "user", "content": f"ticket-{index:07d} {filler}"}]}
    stored = ScoredRunRow(at, trace, f"run-{index}", span, "svc", "agent", orjson.dumps(view).decode())
    return score, decision, stored


def _fill(store: ClickHouseStore, runs: int, text_bytes: int) -> float:
    started, now_ns = time.perf_counter(), time.time_ns()
    for first in range(0, runs, 5000):
        rows = [_rows(i, now_ns, text_bytes) for i in range(first, min(first + 5000, runs))]
        store.insert_scores_sync([r[0] for r in rows])
        store.insert_decisions_sync([r[1] for r in rows])
        store.insert_scored_runs_sync([r[2] for r in rows])
    return time.perf_counter() - started


async def _measure(store: ClickHouseStore, repeat: int) -> dict[str, dict[str, float | int]]:
    out: dict[str, dict[str, float | int]] = {}
    for name, search in SEARCHES.items():
        slowest, found = 0.0, 0
        for _ in range(repeat):
            started = time.perf_counter()
            answer = await search_runs(store, search)
            slowest = max(slowest, time.perf_counter() - started)
            found = len(answer["runs"])
        out[name] = {"slowest_s": round(slowest, 3), "runs_on_page": found}
    return out


def measure(runs: int, text_bytes: int, repeat: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        store = ClickHouseStore(f"chdb://{directory}", "spanscore")
        store.open()
        try:
            fill_s = _fill(store, runs, text_bytes)
            searches = asyncio.run(_measure(store, repeat))
        finally:
            store.close()
    return {"runs": runs, "text_bytes": text_bytes, "text_scan_runs": TEXT_SCAN_RUNS, "fill_s": round(fill_s, 1),
            "limit_s": store.limits.max_execution_time_s, "searches": searches}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50_000)
    parser.add_argument("--text-bytes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure(args.runs, args.text_bytes, args.repeat), indent=2))


if __name__ == "__main__":
    main()
