"""Wall time of single-row queries whose work grows with a product of two sizes, against the time limit.

The engine checks its time limit between blocks only, so one row's work runs to its end. Each query
is timed twice on the embedded store at the default limits (10 s): ``before``, run as the allowlist of
#37 let it (the engine's canonical text on a reader connection with the query API's settings, no
argument checks), and ``after``, through ``ClickHouseStore.query_sync`` (the query API's path), where
the parse-tree check refuses it. ``before`` is skipped unless asked for: it takes minutes.

    python -m bench.query_costs [--before]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from spanscore.errors import PermanentError
from spanscore.storage.clickhouse import ClickHouseStore

QUERIES = {
    "like_4000_wildcards": "SELECT repeat('a', 1000000) LIKE concat(repeat('%a', 4000), '%b')",
    "hasAny_160k_x_160k": "SELECT hasAny(range(160000), arrayMap(x -> x + 1000000, range(160000)))",
    "positionCaseInsensitive_1MB_x_100kB": (
        "SELECT positionCaseInsensitive(repeat('a', 1000000), concat(repeat('a', 100000), 'b'))"
    ),
}
BEFORE_CAP_S = 300.0


def _timed(run: object) -> tuple[float, str]:
    started = time.monotonic()
    try:
        run()  # type: ignore[operator]
        outcome = "answered"
    except PermanentError as exc:
        outcome = f"refused: {str(exc)[:90]}"
    except Exception as exc:  # an engine error is an outcome to report
        outcome = f"engine error: {str(exc)[:90]}"
    return round(time.monotonic() - started, 3), outcome


def _unchecked(store: ClickHouseStore, sql: str) -> None:
    """Run ``sql`` as the query API did before the argument checks: on its reader, with its settings."""
    readers = store._readers  # the reader connections of the query API
    assert readers is not None
    with readers.use() as reader:
        reader.raw_query(f"SELECT * FROM ({sql})", fmt="JSON")


def measure(before: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        store = ClickHouseStore(f"chdb://{directory}", "spanscore")
        store.open()
        try:
            out: dict[str, object] = {"limit_s": store.limits.max_execution_time_s}
            for name, sql in QUERIES.items():
                row: dict[str, object] = {}
                row["after_s"], row["after"] = _timed(lambda sql=sql: store.query_sync(sql))
                if before:
                    row["before_s"], row["before"] = _timed(lambda sql=sql: _unchecked(store, sql))
                out[name] = row
            return out
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", action="store_true", help="also run each query unchecked (minutes)")
    print(json.dumps(measure(parser.parse_args().before), indent=2))


if __name__ == "__main__":
    main()
