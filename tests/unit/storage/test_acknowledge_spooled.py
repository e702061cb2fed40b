"""``storage.acknowledge: spooled``: the spool is the write-ahead log and inserts run behind it."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from spanscore.config import ConfigError, load_config
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling, Consumer
from spanscore.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from spanscore.storage.insert_token import BY_CONTENT
from spanscore.storage.rows import join_json_arrays, records_to_json, spans_from_json
from spanscore.storage.write.logged_batches import LoggedBatches
from spanscore.storage.write.paths import LOG_SPOOL_CODEC, SPAN_SPOOL_CODEC
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.spool_log import SpoolLog
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig
from tests.fakes.collected import Collected


class GatedStore:
    """Inserts wait for ``gate``; each call is recorded so tests can see how batches were merged."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls: list[list[int]] = []
        self.down = False

    async def insert(self, records: list[int]) -> None:  # type: ignore[override]
        await self.gate.wait()
        if self.down:
            raise RetryableError("storage down")
        self.calls.append(list(records))

    @property
    def stored(self) -> list[int]:
        return [value for call in self.calls for value in call]


@pytest.fixture(autouse=True, params=["log", "files"])
def spool_kind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test runs over the append-only log (what ``spool_for`` makes) and the older file-per-batch spool."""
    global SPOOL
    SPOOL = SpoolLog if request.param == "log" else Spool  # type: ignore[assignment]
    yield
    SPOOL = SpoolLog  # type: ignore[assignment]


SPOOL: type[Spool[Any]] = SpoolLog  # type: ignore[assignment]


def _logged(writer: BatchWriter[Any]) -> list[Path]:
    """The batches the writer's spool holds on disk (a file each, or records of the log)."""
    assert writer.spool is not None
    return writer.spool.waiting(1 << 20)


def _writer(
    store: GatedStore,
    spool_dir: Path,
    *,
    batch_max: int = 100,
    insert_interval: float = 0.0,
    stored: Consumer[Sequence[int]] | None = None,
) -> BatchWriter[int]:
    config = WriterConfig(
        batch_max=batch_max, flush_interval=0.0, max_pending=1000, acknowledge="spooled",
        replay_backoff_s=0.01, insert_interval=insert_interval,
    )  # fmt: skip
    return BatchWriter("t", Inserts(Calling(store.insert)), config, spool=SPOOL(spool_dir, 1 << 20), stored=stored)


async def _until(condition, wait_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(wait_s * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)


async def test_acknowledged_once_logged_and_inserted_behind_in_merged_batches(tmp_path: Path) -> None:
    store = GatedStore()
    seen: Collected[int] = Collected()
    writer = _writer(store, tmp_path, batch_max=5, stored=seen)
    await writer.start()
    for value in range(7):
        await asyncio.wait_for(writer.consume([value]), 5)  # storage is stuck, yet every export returns
    assert store.calls == [] and seen == []
    assert len(_logged(writer)) >= 6  # the first may already be waiting on the gate
    store.gate.set()
    await _until(lambda: len(store.stored) == 7)
    await writer.shutdown()
    assert store.stored == list(range(7))
    assert seen == store.stored  # downstream hears of records only once they are in storage
    assert max(len(call) for call in store.calls) > 1 and all(len(call) <= 5 for call in store.calls)
    assert not _logged(writer)
    assert writer.stats.replayed == 0  # nothing had to be read back from disk


async def test_shutdown_drains_the_log_into_storage(tmp_path: Path) -> None:
    store = GatedStore()
    writer = _writer(store, tmp_path)
    await writer.start()
    await writer.consume([1, 2])
    await writer.consume([3])
    store.gate.set()
    await writer.shutdown()
    assert store.stored == [1, 2, 3] and not _logged(writer)


async def test_a_log_left_by_a_dead_process_is_inserted_by_the_next(tmp_path: Path) -> None:
    store = GatedStore()
    store.down = True
    store.gate.set()
    first = _writer(store, tmp_path)
    await first.start()
    await first.consume([1, 2, 3])
    await first.shutdown()  # storage refuses: the batch stays in the log
    assert store.stored == [] and len(_logged(first)) == 1
    store.down = False
    second = _writer(store, tmp_path)
    await second.start()
    await _until(lambda: store.stored == [1, 2, 3])
    await second.shutdown()
    assert store.stored == [1, 2, 3] and second.stats.replayed == 3


def test_spooled_acknowledgement_needs_a_writer_spool() -> None:
    with pytest.raises(ValueError, match="needs a spool"):
        BatchWriter(
            "t",
            Inserts(Calling(GatedStore().insert)),
            WriterConfig(batch_max=1, flush_interval=0, max_pending=1, acknowledge="spooled"),
        )


def test_config_refuses_spooled_acknowledgement_without_a_spool(tmp_path: Path) -> None:
    path = tmp_path / "spanscore.yaml"
    path.write_text("storage:\n  acknowledge: spooled\n  spool_max_bytes: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="storage") as caught:
        load_config(path, environ={})
    assert "spool" in str(caught.value) and str(path) in str(caught.value)


def test_records_survive_the_json_spool_codec_and_old_pickled_batches_still_read(tmp_path: Path) -> None:
    span = SpanRecord(
        trace_id="ab" * 16, span_id="cd" * 8, parent_span_id="", name="llm \u00e9\u4e2d", kind="Client",
        start_time_ns=1_700_000_000_000_000_001, end_time_ns=1_700_000_000_500_000_000, service_name="svc",
        attributes={"gen_ai.request.model": "m", "n": "3"}, resource_attributes={"service.name": "svc"},
        status_code="Error", status_message="boom", trace_state="ot=rv:0123456789abcd", scope_name="s",
        scope_version="1", events=(SpanEvent(5, "e", {"k": "v"}),), links=(SpanLink("ef" * 16, "01" * 8, "", {}),),
    )  # fmt: skip
    log = LogRecord(1, "ab" * 16, "cd" * 8, "gen_ai.user.message", "INFO", 9, '{"content":"hi"}', "svc", {"a": "b"})
    spans: Spool[SpanRecord] = Spool(tmp_path / "spans", 1 << 20, SPAN_SPOOL_CODEC)
    logs: Spool[LogRecord] = Spool(tmp_path / "logs", 1 << 20, LOG_SPOOL_CODEC)
    spans.append([span])
    logs.append([log])
    (tmp_path / "spans" / "000000000009.batch").write_bytes(pickle.dumps([span], protocol=pickle.HIGHEST_PROTOCOL))
    assert [spans.read(path) for path in spans.waiting(10)] == [[span], [span]]
    assert logs.read(logs.waiting(1)[0]) == [log]


async def test_inserts_behind_the_log_are_spaced_by_the_insert_interval(tmp_path: Path) -> None:
    store = GatedStore()
    store.gate.set()
    writer = _writer(store, tmp_path, batch_max=3, insert_interval=30.0)
    await writer.start()
    await writer.consume([0])
    await _until(lambda: store.calls == [[0]], 5)
    assert store.calls == [[0]]  # the first insert does not wait
    await writer.consume([1])
    await writer.consume([2])
    await asyncio.sleep(0.3)
    assert store.calls == [[0]]  # the interval has not passed: the batches wait to merge
    await writer.consume([3])  # batch_max records are waiting: no more waiting
    await _until(lambda: len(store.calls) == 2, 5)
    assert store.calls == [[0], [1, 2, 3]]
    await writer.consume([4])
    await asyncio.wait_for(writer.shutdown(), 5)  # shutdown does not wait out the interval either
    assert store.stored == [0, 1, 2, 3, 4] and not _logged(writer)


def _span(index: int) -> SpanRecord:
    return SpanRecord(
        trace_id=f"{index + 1:032x}", span_id=f"{index + 1:016x}", parent_span_id="", name=f"s{index}",
        kind="Internal", start_time_ns=index, end_time_ns=index + 1, service_name="svc",
        attributes={"i": str(index)}, resource_attributes={},
    )  # fmt: skip


async def test_inserts_reuse_the_logged_bytes_merged_without_encoding_again(tmp_path: Path) -> None:
    bodies: list[bytes] = []
    attempts: list[bytes] = []
    gate = asyncio.Event()

    async def insert_encoded(parts: Sequence[bytes]) -> None:
        body = join_json_arrays(parts)  # what a server is sent; the embedded engine reads the parts in turn
        await gate.wait()
        attempts.append(body)
        if len(attempts) == 1:
            raise RetryableError("storage down")
        bodies.append(body)

    async def insert(records: object) -> None:
        raise AssertionError("records were encoded again")

    seen: Collected[SpanRecord] = Collected()
    writer: BatchWriter[SpanRecord] = BatchWriter(
        "spans",
        Inserts(Calling(insert), encoded=Calling(insert_encoded)),
        WriterConfig(batch_max=100, flush_interval=0.0, max_pending=1000, acknowledge="spooled", replay_backoff_s=0.01),
        stored=seen,
        spool=SPOOL(tmp_path, 1 << 20, SPAN_SPOOL_CODEC),
    )
    await writer.start()
    batches = [[_span(0), _span(1)], [], [_span(2)], [_span(3), _span(4)]]
    for batch in batches:
        await writer.consume(batch)
    gate.set()
    await _until(lambda: len(seen) == 5)
    await writer.shutdown()
    spans = [span for batch in batches for span in batch]
    assert seen == spans
    assert [span for body in bodies for span in spans_from_json(body)] == spans
    # The failed first insert is retried with the very same bytes (storage deduplicates a repeated block),
    # and a body is the JSON the records would have been encoded to.
    assert attempts[1] == attempts[0]
    assert all(body == records_to_json(spans_from_json(body)) for body in bodies)
    assert not _logged(writer)


def test_joined_json_arrays_are_the_array_of_all_records() -> None:
    parts = [records_to_json([_span(0)]), records_to_json([]), records_to_json([_span(1), _span(2)])]
    assert join_json_arrays(parts) == records_to_json([_span(0), _span(1), _span(2)])
    assert join_json_arrays([records_to_json([])]) == b"[]"
    assert join_json_arrays([records_to_json([]), records_to_json([])]) == b"[]"
    after_empty = [records_to_json([]), records_to_json([_span(0)]), records_to_json([]), records_to_json([_span(1)])]
    assert join_json_arrays(after_empty) == records_to_json([_span(0), _span(1)])


async def test_logged_batches_past_the_byte_bound_are_read_back_from_the_log(tmp_path: Path) -> None:
    """Memory holds logged batches only up to ``cache_max_bytes``; the rest come back from the log on disk."""
    bodies: list[bytes] = []
    gate = asyncio.Event()

    async def insert_encoded(parts: Sequence[bytes]) -> None:
        body = join_json_arrays(parts)  # what a server is sent; the embedded engine reads the parts in turn
        await gate.wait()
        bodies.append(body)

    read_back: list[SpanRecord] = []

    async def insert(records: list[SpanRecord]) -> None:
        await gate.wait()
        read_back.extend(records)

    one_batch = len(records_to_json([_span(0)]))
    writer: BatchWriter[SpanRecord] = BatchWriter(
        "spans",
        Inserts(Calling(insert), encoded=Calling(insert_encoded)),
        WriterConfig(
            batch_max=100,
            flush_interval=0.0,
            max_pending=1000,
            replay_backoff_s=0.01,
            acknowledge="spooled",
            cache_max_bytes=2 * one_batch + 1,
        ),
        spool=SPOOL(tmp_path, 1 << 20, SPAN_SPOOL_CODEC),
    )
    await writer.start()
    for index in range(5):
        await writer.consume([_span(index)])
    assert writer._replay is not None
    kept = len(writer._replay.logged)
    assert writer._replay.logged.size <= 2 * one_batch + 1 and kept <= 2
    gate.set()
    await _until(lambda: writer.stats.stored == 5)
    await writer.shutdown()
    inserted = [span for body in bodies for span in spans_from_json(body)]
    assert inserted == [_span(index) for index in range(5)]
    assert read_back == []  # the batches read back went in as the bytes they were logged as
    assert writer.stats.replayed == 5 - kept  # the uncached ones came from the log
    assert writer._replay.logged.size == 0 and not _logged(writer)


async def test_inserts_behind_the_log_merge_up_to_insert_max_not_batch_max(tmp_path: Path) -> None:
    """A spooled ack does not wait for the insert, so the insert gathers more than one group commit's batch."""
    store = GatedStore()
    config = WriterConfig(
        batch_max=2, flush_interval=0.0, max_pending=1000, acknowledge="spooled", replay_backoff_s=0.01,
        insert_interval=30.0, insert_max=7,
    )  # fmt: skip
    writer = BatchWriter("t", Inserts(Calling(store.insert)), config, spool=SPOOL(tmp_path, 1 << 20))
    await writer.start()
    await writer.consume([0])
    for value in range(1, 15):  # each a logged batch of one: the first insert is held at the gate meanwhile
        await writer.consume([value])
    store.gate.set()
    await _until(lambda: len(store.stored) == 15)
    await writer.shutdown()
    assert store.stored == list(range(15))
    assert max(len(call) for call in store.calls) == 7 and all(len(call) <= 7 for call in store.calls)


@pytest.mark.parametrize("in_memory", [True, False], ids=["kept in memory", "read back from disk"])
async def test_inserts_behind_the_log_merge_at_most_insert_max_bytes_of_logged_spans(
    tmp_path: Path, in_memory: bool
) -> None:
    """The record bound alone let one insert merge 50,000 LLM-sized spans, about 260 MB joined, beside what waited.

    So merging also stops at ``insert_max_bytes`` of the batches' logged JSON, for batches kept in memory and
    for those read back from disk alike; a batch larger than the bound still goes, alone (#43, session 28).
    """
    bodies: list[bytes] = []
    gate = asyncio.Event()

    async def insert_encoded(parts: Sequence[bytes]) -> None:
        body = join_json_arrays(parts)
        await gate.wait()
        bodies.append(body)

    async def insert(records: object) -> None:
        raise AssertionError("records were encoded again")

    one_batch = len(records_to_json([_span(0)]))
    big = [_span(index) for index in range(100, 104)]  # one batch over the byte bound on its own
    config = WriterConfig(
        batch_max=100, flush_interval=0.0, max_pending=1000, replay_backoff_s=0.01, acknowledge="spooled",
        insert_interval=30.0, insert_max=1000, insert_max_bytes=int(2.5 * one_batch),
        cache_max_bytes=(1 << 30) if in_memory else one_batch - 1,
    )  # fmt: skip
    writer: BatchWriter[SpanRecord] = BatchWriter(
        "spans", Inserts(Calling(insert), encoded=Calling(insert_encoded)), config,
        spool=SPOOL(tmp_path, 1 << 20, SPAN_SPOOL_CODEC),
    )  # fmt: skip
    await writer.start()
    await writer.consume([_span(0)])
    for index in range(1, 9):  # each a logged batch of one span: the first insert is held at the gate meanwhile
        await writer.consume([_span(index)])
    await writer.consume(big)
    await writer.consume([_span(9)])
    gate.set()
    await _until(lambda: writer.stats.stored == 14)
    await writer.shutdown()
    stored = [spans_from_json(body) for body in bodies]
    assert [span for spans in stored for span in spans] == [_span(index) for index in range(9)] + big + [_span(9)]
    assert all(len(body) <= 2.5 * one_batch for body, spans in zip(bodies, stored, strict=True) if spans != big)
    assert big in stored  # over the bound alone: inserted by itself, not held back
    assert max(len(spans) for spans in stored if spans != big) == 2  # the bound, not the 1,000 records, split them
    assert not _logged(writer)


def test_the_storage_config_sets_the_rows_per_insert_behind_the_spool() -> None:
    storage = load_config(None, environ={"SPANSCORE_STORAGE__INSERT_MAX_SPANS": "60000"}).storage
    config = WriterConfig.from_storage(storage, max_pending=10, acknowledge="spooled")
    assert config.records_per_insert == 60_000 and config.batch_max == storage.batch_max_spans
    assert config.insert_max_bytes == storage.insert_max_bytes == 64 << 20
    assert WriterConfig(batch_max=5, flush_interval=0, max_pending=1).records_per_insert == 5
    with pytest.raises(ValueError, match="insert_max"):
        WriterConfig(batch_max=5, flush_interval=0, max_pending=1, insert_max=-1)
    with pytest.raises(ValueError, match="insert_max_bytes"):
        WriterConfig(batch_max=5, flush_interval=0, max_pending=1, insert_max_bytes=-1)
    with pytest.raises(ConfigError, match="insert_max_bytes"):
        load_config(None, environ={"SPANSCORE_STORAGE__INSERT_MAX_BYTES": "0"})


def _spilling_writer(
    tmp_path: Path,
    insert_max: int,
    bodies: list[bytes],
    encoded_again: list[SpanRecord],
    gate: asyncio.Event,
    *,
    read_back_max_bytes: int = 32 << 20,
    insert_interval: float = 0.0,
) -> BatchWriter[SpanRecord]:
    """A span writer whose memory keeps no logged batch: every insert reads its batches back from the log."""

    async def insert_encoded(parts: Sequence[bytes]) -> None:
        body = join_json_arrays(parts)  # what a server is sent; the embedded engine reads the parts in turn
        await gate.wait()
        bodies.append(body)

    async def insert(records: list[SpanRecord]) -> None:
        await gate.wait()
        encoded_again.extend(records)

    config = WriterConfig(
        batch_max=100, flush_interval=0.0, max_pending=1000, replay_backoff_s=0.01, acknowledge="spooled",
        cache_max_bytes=len(records_to_json([_span(0)])) - 1, insert_max=insert_max,
        read_back_max_bytes=read_back_max_bytes, insert_interval=insert_interval,
    )  # fmt: skip
    inserts = Inserts(Calling(insert), encoded=Calling(insert_encoded))
    return BatchWriter("spans", inserts, config, spool=SPOOL(tmp_path, 1 << 20, SPAN_SPOOL_CODEC))


async def test_batches_read_back_from_the_log_merge_into_large_inserts_of_their_logged_bytes(tmp_path: Path) -> None:
    """Past the memory bound the log is read back; its batches still merge, and their bytes are sent as logged.

    One insert per read-back batch drained LLM-sized spans at a quarter of the rate they were acknowledged, so a
    spool that had once overflowed its memory bound filled up (#43).
    """
    bodies: list[bytes] = []
    encoded_again: list[SpanRecord] = []
    gate = asyncio.Event()
    writer = _spilling_writer(tmp_path, 5, bodies, encoded_again, gate)
    await writer.start()
    for index in range(12):
        await writer.consume([_span(index)])
    assert writer._replay is not None and len(writer._replay.logged) == 0  # nothing kept: all on disk
    gate.set()
    await _until(lambda: writer.stats.stored == 12)
    await writer.shutdown()
    assert encoded_again == []  # the log's bytes went in as they were
    sizes = [len(spans_from_json(body)) for body in bodies]  # the first may go before the rest are logged
    assert max(sizes) == 5 and len(sizes) <= 4
    assert [span for body in bodies for span in spans_from_json(body)] == [_span(index) for index in range(12)]
    assert writer.stats.replayed == 12 and writer.stats.inserts == len(bodies) and not _logged(writer)


async def test_an_insert_reads_back_at_most_read_back_max_bytes_of_batches(tmp_path: Path) -> None:
    bodies: list[bytes] = []
    gate = asyncio.Event()
    one_batch = len(records_to_json([_span(0)]))
    writer = _spilling_writer(tmp_path, 1000, bodies, [], gate, read_back_max_bytes=2 * one_batch)
    await writer.start()
    for index in range(7):
        await writer.consume([_span(index)])
    gate.set()
    await _until(lambda: writer.stats.stored == 7)
    await writer.shutdown()
    sizes = [len(spans_from_json(body)) for body in bodies]
    assert max(sizes) == 2 and len(sizes) <= 5
    assert [span for body in bodies for span in spans_from_json(body)] == [_span(index) for index in range(7)]


async def test_a_backlog_on_disk_is_inserted_without_waiting_out_the_insert_interval(tmp_path: Path) -> None:
    """The interval lets batches arriving in memory merge; batches already waiting on disk need no wait."""
    bodies: list[bytes] = []
    gate = asyncio.Event()
    writer = _spilling_writer(tmp_path, 2, bodies, [], gate, insert_interval=30.0)
    await writer.start()
    for index in range(6):
        await writer.consume([_span(index)])
    gate.set()
    await _until(lambda: writer.stats.stored == 6, 5)
    assert writer.stats.stored == 6  # three inserts, not one every 30 s
    await writer.shutdown()


async def test_an_old_pickled_batch_on_disk_is_encoded_again_when_merged(tmp_path: Path) -> None:
    """Bytes an older version wrote (pickles) are not the form the insert takes: that set's records are re-encoded."""
    old: Spool[SpanRecord] = Spool(tmp_path, 1 << 20)  # pickle codec, one file per batch
    old.append([_span(0)])
    old.append([_span(1)])
    bodies: list[bytes] = []
    encoded_again: list[SpanRecord] = []
    gate = asyncio.Event()
    writer = _spilling_writer(tmp_path, 1000, bodies, encoded_again, gate)
    await writer.start()
    await writer.consume([_span(2)])
    gate.set()
    await _until(lambda: writer.stats.stored == 3)
    await writer.shutdown()
    stored = encoded_again + [span for body in bodies for span in spans_from_json(body)]
    assert stored == [_span(0), _span(1), _span(2)] and encoded_again[:2] == [_span(0), _span(1)]


class _WriterLostOnce(SpoolLog[int]):
    """A log whose first batch is logged and listed, but whose writer never has it back (its export cancelled)."""

    failed = False

    def append(self, records: Sequence[int], token: str | None = None) -> tuple[Path, list[bytes]]:
        written = super().append(records, token)
        if not self.failed:
            self.failed = True
            raise OSError("the writer was lost")
        return written


async def test_a_logged_batch_whose_writer_never_comes_back_is_still_inserted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay takes batches still being logged from memory once their writer has them back; one whose
    writer never comes back is read from disk after a grace, not waited for forever. (A batch whose sync failed
    is not listed any more: tests/unit/storage/test_replay_faults.py.)"""
    monkeypatch.setattr("spanscore.storage.write.replay.LOGGING_GRACE_S", 0.2)
    store = GatedStore()
    store.gate.set()
    config = WriterConfig(
        batch_max=100, flush_interval=0.0, max_pending=1000, acknowledge="spooled", replay_backoff_s=0.01
    )
    writer = BatchWriter("t", Inserts(Calling(store.insert)), config, spool=_WriterLostOnce(tmp_path, 1 << 20))
    await writer.start()
    with pytest.raises(RetryableError, match="the writer was lost"):
        await writer.consume([1])  # logged and durable, its writer gone: stored, never waited for forever
    await writer.consume([2])
    await _until(lambda: len(store.stored) == 2, 5)
    await writer.shutdown()
    assert store.stored == [1, 2] and not _logged(writer)
    assert writer._replay is not None and writer._replay.logged.count == 0


def test_a_presumed_batch_whose_writer_comes_back_after_its_insert_is_not_kept() -> None:
    logged: LoggedBatches[int] = LoggedBatches(100, 1 << 20, first_number=5)
    late, earlier, listed = (
        Path(f"/s/{number:012d}-{letter * 32}.batch") for number, letter in ((7, "a"), (3, "b"), (8, "c"))
    )
    assert logged.on_disk(earlier) and not logged.on_disk(late)  # numbered before this process: logged earlier
    logged.presume_on_disk(late)
    assert logged.on_disk(late)
    logged.forget(late)  # read from disk, inserted
    logged.keep(late, [1, 2], [b"xx"])  # its writer comes back only now
    assert logged.records(late) is None and logged.count == 0 and logged.size == 0
    logged.keep(listed, [3], [b"y"])
    assert logged.records(listed) == [3] and not logged.on_disk(listed)
    logged.presume_on_disk(listed)
    logged.keep(listed, [3], [b"y"])  # came back before the insert: kept as any other
    logged.forget(listed)
    logged.keep(listed, [3], [b"y"])
    assert logged.records(listed) == [3]  # not a presumed one any more: kept again (a new logging of it)


async def test_the_oldest_batch_an_earlier_process_left_goes_alone_and_the_rest_merge(tmp_path: Path) -> None:
    """The earlier process may have stored its oldest batch under that batch's token and died before deleting
    it: merged with others under a new token, storage would keep it twice (tests/e2e/test_replay_kill.py). The
    others were never tried: one insert each drained a restart's backlog at a fraction of the merged rate."""
    store = GatedStore()
    store.down = True
    store.gate.set()
    first = _writer(store, tmp_path)
    await first.start()
    for value in range(3):
        await first.consume([value])
    await first.shutdown()  # storage refuses: all three stay in the log
    store.down = False
    second = _writer(store, tmp_path)
    await second.start()
    await _until(lambda: len(store.stored) == 3)
    await second.shutdown()
    assert store.calls == [[0], [1, 2]]


def test_which_batches_left_on_disk_may_merge() -> None:
    def batch(number: int, token: str) -> Path:
        return Path(f"/s/{number:012d}-{token}.batch")

    head = batch(3, "a" * 32)
    logged: LoggedBatches[int] = LoggedBatches(100, 1 << 20, first_number=10, earlier_head=head)
    assert not logged.mergeable(head)  # perhaps inserted alone just before the earlier process stopped
    assert logged.mergeable(batch(4, "b" * 32))  # never tried
    assert not logged.mergeable(batch(5, BY_CONTENT))  # spooled after a failed insert that may have landed
    listed = batch(12, "c" * 32)
    assert not logged.mergeable(listed)  # this process's, still being logged
    logged.keep(listed, [1] * 200, None)  # over the record bound: not kept, never inserted by anyone
    assert logged.mergeable(listed)
    spilled = batch(13, "d" * 32)
    logged.spilled(spilled)
    assert not logged.mergeable(spilled)
