"""A batch sent twice under its deduplication token is stored once, in every table and every view's target.

Real embedded engine, real migrations: this is what makes a replay after a crash (or a retry of an
insert that failed after it landed) exactly once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.records import LogRecord, SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.insert_token import insert_token, new_token
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig
from tests.unit.storage.test_rollups import BASE_NS, make_scores

ROWS = 5


def spans() -> list[SpanRecord]:
    return [
        SpanRecord(f"{i:032x}", f"{i:016x}", "", "step", "Internal", BASE_NS + i, BASE_NS + i + 5) for i in range(ROWS)
    ]


def logs() -> list[LogRecord]:
    return [LogRecord(BASE_NS + i, f"{i:032x}", f"{i:016x}", "gen_ai.user.message", "", 9, "hi") for i in range(ROWS)]


def decisions() -> list[DecisionRow]:
    return [
        DecisionRow(BASE_NS + i, f"{i:032x}", "a1", f"run-{i}", "svc", "agent", "prod", "sampled", 1.0, "", "")
        for i in range(ROWS)
    ]


def scored_runs() -> list[ScoredRunRow]:
    return [
        ScoredRunRow(BASE_NS + i, f"{i:032x}", f"run-{i}", f"{i:016x}", "svc", "agent", "{}", BASE_NS)
        for i in range(ROWS)
    ]


def count(store: ClickHouseStore, table: str) -> int:
    return int(store.internal_query(f"SELECT count() FROM {table}")[0][0])


def rollup_scores(store: ClickHouseStore, grain: str) -> int:
    """Scores the roll-up counts (a view's target: it gets a block even when ``scores`` dropped one)."""
    return int(store.internal_query(f"SELECT countMerge(ScoresState) FROM scores_{grain}")[0][0])


def inserts(store: ClickHouseStore) -> dict[str, Callable[[], Awaitable[None]]]:
    """One batch per writer, by the store method its writer uses; tables counted for each."""
    return {
        "otel_traces otel_traces_trace_id_ts": lambda: store.insert_spans(spans()),
        "otel_logs": lambda: store.insert_logs(logs()),
        "scores": lambda: store.insert_scores(make_scores(ROWS)),
        "score_decisions": lambda: store.insert_decisions(decisions()),
        "scored_runs": lambda: store.insert_scored_runs(scored_runs()),
    }


async def test_a_batch_inserted_twice_under_its_token_is_stored_once(store: ClickHouseStore) -> None:
    for tables, insert in inserts(store).items():
        token = new_token()
        for _ in range(2):
            with insert_token(token):
                await insert()
        for table in tables.split():
            assert count(store, table) == ROWS, f"{table}: stored twice"
    assert (rollup_scores(store, "1m"), rollup_scores(store, "1h")) == (ROWS, ROWS)
    # The same rows under a second token are a second batch: the token, not the rows, is what is compared.
    with insert_token(new_token()):
        await store.insert_spans(spans())
    assert count(store, "otel_traces") == 2 * ROWS


async def test_the_spans_log_bytes_and_the_records_are_one_batch_under_one_token(store: ClickHouseStore) -> None:
    """A merged replay sends the log's bytes; after a crash the next process sends records it read back."""
    from spanscore.storage.rows import records_to_json

    token = new_token()
    with insert_token(token):
        await store.insert_span_json([records_to_json(spans())])
        await store.insert_spans(spans())
        await store.insert_spans_bulk(spans())
    assert count(store, "otel_traces") == ROWS


async def test_several_logged_batches_go_in_as_one_insert_of_all_their_rows(store: ClickHouseStore) -> None:
    """A merged replay sends its batches' logged bytes, each batch's own JSON array: they go in as one insert."""
    from spanscore.storage.rows import records_to_json

    rows = spans()
    parts = [records_to_json(rows[:2]), records_to_json([]), records_to_json(rows[2:3]), records_to_json(rows[3:])]
    with insert_token(new_token()):
        await store.insert_span_json(parts)
    stored = store.internal_query("SELECT SpanId FROM otel_traces ORDER BY SpanId")
    assert [row[0] for row in stored] == [span.span_id for span in rows]


async def test_a_live_insert_that_failed_after_landing_is_stored_once_by_its_replay(
    store: ClickHouseStore, tmp_path: Path
) -> None:
    """``acknowledge: stored``: the insert lands, its answer is lost; the batch is spooled and replayed."""
    failures = {"left": 1}

    async def land_then_fail(rows):  # type: ignore[no-untyped-def]
        await store.insert_scores(rows)
        if failures["left"]:
            failures["left"] -= 1
            raise RetryableError("the answer was lost (injected)")

    spool: Spool[object] = Spool(tmp_path, 1 << 20)
    config = WriterConfig(batch_max=100, flush_interval=0.0, max_pending=100, replay_backoff_s=0.01)
    writer = BatchWriter("scores", Inserts(Calling(land_then_fail)), config, spool=spool)
    await writer.start()
    try:
        await writer.consume(make_scores(ROWS))
    finally:
        await writer.shutdown()
    assert failures["left"] == 0 and writer.stats.stored == ROWS and spool.batches == 0
    assert (count(store, "scores"), rollup_scores(store, "1h")) == (ROWS, ROWS)


@pytest.mark.parametrize("bad", ["", "A" * 32, "0" * 31, "../" + "0" * 29])
def test_a_token_of_the_wrong_form_is_refused_naming_it(bad: str) -> None:
    with pytest.raises(ValueError, match="32 lowercase hex digits"), insert_token(bad):
        pass
