"""The pieces behind "a refused batch never blocks storage": classifier, splitter, bisection, dead letters."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.storage.insert_errors import InsertDataError, classify_engine_error
from spanscore.storage.write.deadletter import DeadLetters
from spanscore.storage.write.salvage import Salvager, split_by_partition

PARTITIONS = "Code: 252. DB::Exception: Too many partitions for single INSERT block (more than 100). (TOO_MANY_PARTS)"


@pytest.mark.parametrize(
    ("message", "data"),
    [
        (PARTITIONS, True),
        ("Code: 252. DB::Exception: Too many parts (300). Merges are processing slower. (TOO_MANY_PARTS)", False),
        ("Code: 41. DB::Exception: Cannot read DateTime: unexpected word. (CANNOT_PARSE_DATETIME)", True),
        ("Code: 241. DB::Exception: Memory limit (total) exceeded. (MEMORY_LIMIT_EXCEEDED)", False),
        ("Code: 159. DB::Exception: Timeout exceeded. (TIMEOUT_EXCEEDED)", False),
        ("Code: 99999. DB::Exception: something new", False),
        ("connection reset by peer", False),
    ],
)
def test_engine_errors_are_classified_by_their_code(message: str, data: bool) -> None:
    error = classify_engine_error("otel_traces", RuntimeError(message))
    assert isinstance(error, InsertDataError) is data
    assert isinstance(error, RetryableError) is not data
    assert "otel_traces" in str(error)


def test_split_by_partition_keeps_pieces_under_the_limit_and_every_record() -> None:
    records = [(day, n) for day in range(120) for n in range(2)]
    pieces = split_by_partition(records, lambda record: record[0], 64)
    assert [len({day for day, _ in piece}) for piece in pieces] == [64, 56]
    assert sorted(r for piece in pieces for r in piece) == sorted(records)
    assert split_by_partition(records[:10], lambda record: record[0], 64) == [records[:10]]


class Engine:
    """Refuses blocks over 100 partitions and any block holding a negative value, like the real engine would."""

    def __init__(self) -> None:
        self.stored: list[int] = []

    async def insert(self, rows: Sequence[int]) -> None:
        if len({row // 10 for row in rows}) > 100:
            raise InsertDataError(PARTITIONS, code=252, partitions=True)
        if any(row < 0 for row in rows):
            raise InsertDataError("Code: 72. DB::Exception: Unsigned type must not contain '-'", code=72)
        self.stored.extend(rows)


async def test_salvage_stores_every_row_it_can_and_dead_letters_the_rest(tmp_path: Path) -> None:
    engine = Engine()
    dead: DeadLetters[int] = DeadLetters(tmp_path / "dead", "numbers")
    salvager: Salvager[int] = Salvager("numbers", dead, lambda row: row // 10)
    rows = [*range(0, 1500, 3), -7, *range(1, 1500, 3), -8]
    salvage = salvager.begin(rows, Calling(engine.insert), InsertDataError(PARTITIONS, partitions=True))
    await salvage.run()
    assert sorted(engine.stored) == sorted(row for row in rows if row >= 0)
    assert sorted(salvage.stored) == sorted(engine.stored)
    assert salvager.dead_lettered == 2
    entries = dead.entries()
    assert [entry.records for entry in entries] == [1, 1]
    assert all("Code: 72" in entry.reason and entry.code == 72 for entry in entries)
    assert sorted(row for entry in entries for row in dead.read(entry.id)) == [-8, -7]


async def test_salvage_resumes_after_storage_goes_away_without_storing_a_piece_twice(tmp_path: Path) -> None:
    engine = Engine()
    calls = {"n": 0}

    async def flaky(rows: Sequence[int]) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RetryableError("storage unavailable")
        await engine.insert(rows)

    salvager: Salvager[int] = Salvager("numbers", None, lambda row: row // 10)
    salvage = salvager.begin(list(range(2000)), Calling(flaky), InsertDataError(PARTITIONS, partitions=True))
    with pytest.raises(RetryableError):
        await salvage.run()
    await salvage.run()
    assert sorted(engine.stored) == list(range(2000))  # each row exactly once


def test_dead_letters_survive_a_reopen_and_remove_by_id(tmp_path: Path) -> None:
    first: DeadLetters[str] = DeadLetters(tmp_path, "logs")
    kept = first.add(["a", "b"], "Code: 41. bad time", 41)
    first.add(["c"], "Code: 72. bad number", 72)
    again: DeadLetters[str] = DeadLetters(tmp_path, "logs")
    assert (again.batches, again.records) == (2, 3)
    assert again.read(kept.id) == ["a", "b"]
    again.remove(kept.id)
    assert (again.batches, again.records) == (1, 1)
    with pytest.raises(KeyError, match="no dead-letter entry"):
        again.read(kept.id)


async def test_a_writer_retrying_past_its_limit_reports_stuck_until_storage_takes_rows(tmp_path: Path) -> None:
    from spanscore.storage.write.spool import Spool
    from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig

    stored: list[int] = []
    down = {"on": True}

    async def insert(rows: Sequence[int]) -> None:
        if down["on"]:
            raise RetryableError("storage unavailable (injected)")
        stored.extend(rows)

    writer: BatchWriter[int] = BatchWriter(
        "numbers",
        Inserts(Calling(insert)),
        WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100, replay_backoff_s=0.01, stuck_after_s=0.0),
        spool=Spool(tmp_path / "spool", 1 << 20),
    )
    await writer.start()
    try:
        await writer.consume([1, 2, 3])  # acknowledged from the spool
        [problem] = writer.problems()
        assert "numbers writer has been retrying" in problem and "injected" in problem
        down["on"] = False
        for _ in range(500):  # at most 5 s
            if stored:
                break
            await asyncio.sleep(0.01)
        assert stored == [1, 2, 3]
        assert writer.problems() == []
    finally:
        await writer.shutdown()


async def test_a_batch_of_only_bad_rows_costs_a_bounded_number_of_inserts(tmp_path: Path) -> None:
    engine = Engine()
    attempts = {"n": 0}

    async def counted(rows: Sequence[int]) -> None:
        attempts["n"] += 1
        await engine.insert(rows)

    dead: DeadLetters[int] = DeadLetters(tmp_path / "dead", "numbers")
    salvager: Salvager[int] = Salvager("numbers", dead)
    rows = [-row - 1 for row in range(5000)]
    await salvager.begin(rows, Calling(counted), InsertDataError("Code: 72.", code=72)).run()
    assert attempts["n"] <= 2 * 64 + 2  # not about 10,000 (two per row)
    assert engine.stored == []
    assert salvager.dead_lettered == 5000
    assert sorted(row for entry in dead.entries() for row in dead.read(entry.id)) == sorted(rows)


@pytest.mark.parametrize(("stuck_after_s", "stuck"), [(0.001, True), (3600.0, False)])
async def test_the_stuck_threshold_comes_from_the_config(tmp_path: Path, stuck_after_s: float, stuck: bool) -> None:
    """``storage.stuck_after_s`` reaches the writers: the same outage is "stuck" only past the configured time."""
    from spanscore.config import ServiceConfig
    from spanscore.storage.scores import DecisionRow
    from spanscore.storage.write import paths as write_paths

    storage = ServiceConfig.model_validate(
        {"storage": {"spool_dir": str(tmp_path / "spool"), "stuck_after_s": stuck_after_s}}
    ).storage

    class DownStore:
        async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
            raise RetryableError("storage unavailable (injected)")

    writer = write_paths.decision_writer(DownStore(), storage)  # type: ignore[arg-type]
    await writer.start()
    try:
        row = DecisionRow(1, "t" * 32, "s" * 16, "r", "svc", "agent", "rule", "scored", 1.0, "sampled", "quiet")
        await writer.consume([row])  # kept in the spool while storage is down
        for _ in range(200):  # at most 2 s for the first failed insert
            if writer.stats.last_error:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.01)
        assert any("retrying" in problem for problem in writer.problems()) is stuck
    finally:
        await writer.shutdown()
