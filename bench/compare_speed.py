"""``python -m bench.compare_speed [--scores 10000000] [--repeat 7] [--data-dir DIR]``: how fast is a comparison?

Fills an embedded store with ``--scores`` synthetic scores over the last day (generated inside the engine:
5 scorers, 4 service versions kept as ``Attributes['version.service.version']``, 3 models, sampling rates
0.1-1.0), then times ``compare_store`` (the work behind ``report compare`` and ``POST /api/v1/compare``) by a
kept attribute and by a score column, ``--repeat`` times each, and prints p50 and max. Nothing is asserted;
docs/compare.md carries the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from spanscore.alerting.version_report import CompareRequest, compare_store
from spanscore.storage.clickhouse import ClickHouseStore

FILL = """
INSERT INTO scores (ScoreId, Timestamp, RunTimestamp, TraceId, SpanId, RunId, ServiceName, AgentName, Model, Rule,
    Scorer, ScorerVersion, Score, Label, Status, SampleRate, HigherIsBetter, RunDurationMs, Attributes, Version,
    Source)
SELECT hex(cityHash64(number)), now64(9), now64(9) - toIntervalSecond(number % 86000), hex(number), 's', hex(number),
    'svc', 'agent', ['gpt-4o', 'gpt-4.1', 'o3'][number % 3 + 1], 'r', concat('scorer', toString(number % 5)), '1',
    if(number % 5 = 0, toFloat64((cityHash64(number, 1) % 100) < 70), (cityHash64(number, 2) % 1000) / 1000),
    '', 'ok', [1.0, 0.5, 0.25, 0.1][number % 4 + 1], true, 100 + number % 900,
    map('version.service.version', ['1.4.0', '1.5.0', '1.6.0', '1.7.0'][intDiv(number, 7) % 4 + 1]), 1, 'spanscore'
FROM numbers({start:UInt64}, {count:UInt64})
"""


def fill(store: ClickHouseStore, total: int, batch: int = 1_000_000) -> float:
    started = time.monotonic()
    for start in range(0, total, batch):
        store.internal_query(FILL, {"start": start, "count": min(batch, total - start)})
    store.internal_query("OPTIMIZE TABLE scores FINAL")
    return time.monotonic() - started


async def timed(store: ClickHouseStore, by: str, baseline: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.monotonic()
        await compare_store(store, CompareRequest(by, baseline, "24h"))
        times.append((time.monotonic() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scores", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--data-dir", help="where the embedded store goes (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="compare-speed-") as scratch:
        data = Path(args.data_dir or scratch)
        store = ClickHouseStore(f"chdb://{data}", "spanscore")
        store.open()
        try:
            seconds = fill(store, args.scores)
            print(f"{args.scores:,} scores filled in {seconds:.0f} s")
            cases = (("service.version", "1.4.0"), ("gen_ai.request.model", "gpt-4o"))
            times: dict[str, list[float]] = {by: [] for by, _ in cases}
            for _ in range(args.repeat):  # interleaved, so background merges after the fill weigh on both alike
                for by, baseline in cases:
                    times[by] += asyncio.run(timed(store, by, baseline, 1))
            for by, found in times.items():
                print(f"--by {by}: p50 {statistics.median(found):.0f} ms, max {max(found):.0f} ms ({args.repeat} runs)")
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
