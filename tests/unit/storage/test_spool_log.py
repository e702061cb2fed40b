"""The append-only spool log: batches come back in order after a reopen, a torn tail is cut, older spools replay."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from spanscore.errors import RetryableError
from spanscore.storage.write import log_records
from spanscore.storage.write.replay_intent import ReplayIntents
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.spool_log import SpoolLog


def _drain(spool: SpoolLog[int]) -> list[list[int]]:
    seen = []
    while paths := spool.waiting(1):
        seen.append(spool.read(paths[0]))
        spool.remove(paths[0])
    return seen


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def test_batches_come_back_in_order_after_a_reopen_and_removed_ones_stay_removed(tmp_path: Path) -> None:
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    first, _ = spool.append([1, 2])
    spool.append([3])
    spool.append([4, 5, 6])
    spool.remove(first)
    spool.close()
    reopened: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    assert reopened.batches == 2 and not reopened.holds(first)
    reopened.append([7])
    assert _drain(reopened) == [[3], [4, 5, 6], [7]]
    assert reopened.batches == 0 and reopened.size_bytes == 0
    reopened.close()
    assert SpoolLog(tmp_path, max_bytes=1 << 20).batches == 0


def test_a_handle_keeps_the_batch_token_and_a_given_token_is_kept(tmp_path: Path) -> None:
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    kept, _ = spool.append([2], token="ab" * 16)
    fresh, _ = spool.append([3])
    assert SpoolLog.token(kept) == "ab" * 16 and SpoolLog.token(fresh) != "ab" * 16
    assert not kept.exists()  # a name, not a file: the batch is a record of the log
    spool.close()
    (again,) = SpoolLog(tmp_path, max_bytes=1 << 20).waiting(1)
    assert again == kept


def test_a_torn_tail_is_cut_and_the_batches_before_it_kept(tmp_path: Path) -> None:
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    spool.append([1])
    spool.append([2])
    spool.close()
    (segment,) = _segments(tmp_path)
    whole = segment.stat().st_size
    torn = b"".join(log_records.frame(log_records.BATCH, 3, "cd" * 16, [b"[3,3,3,3]"]))
    with open(segment, "ab") as handle:
        handle.write(torn[: len(torn) - 4])  # a crash in the middle of the payload
    reopened: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    assert segment.stat().st_size == whole
    reopened.append([4])
    assert _drain(reopened) == [[1], [2], [4]]


@pytest.mark.parametrize("damage", ["flipped byte", "zeros", "header only"])
def test_a_record_that_fails_its_checksum_ends_the_segment(tmp_path: Path, damage: str) -> None:
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    spool.append([1])
    second, _ = spool.append([2, 2])
    spool.close()
    (segment,) = _segments(tmp_path)
    data = bytearray(segment.read_bytes())
    last = data.rindex(log_records.MAGIC)
    if damage == "flipped byte":
        data[-2] ^= 0xFF
    elif damage == "zeros":
        data[last + log_records.HEADER.size :] = bytes(len(data) - last - log_records.HEADER.size)
    else:
        del data[last + log_records.HEADER.size :]
    segment.write_bytes(bytes(data))
    reopened: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    assert not reopened.holds(second) and _drain(reopened) == [[1]]
    assert not segment.exists() or segment.stat().st_size == last


def test_a_spool_of_batch_files_from_before_the_log_replays_first(tmp_path: Path) -> None:
    older: Spool[int] = Spool(tmp_path, max_bytes=1 << 20)
    older.append([1])
    older.append([2])
    upgraded: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    assert upgraded.batches == 2
    newer, _ = upgraded.append([3])
    assert newer.name.startswith("000000000003-")  # numbered after the files
    assert _drain(upgraded) == [[1], [2], [3]]
    assert not list(tmp_path.glob("*.batch"))


def test_segments_are_dropped_once_they_and_all_older_ones_are_drained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("spanscore.storage.write.log_segments.SEGMENT_BYTES", 256)
    spool: SpoolLog[str] = SpoolLog(tmp_path, max_bytes=1 << 20)
    handles = [spool.append(["x" * 100])[0] for _ in range(4)]
    assert len(_segments(tmp_path)) == 4
    spool.remove(handles[1])  # the oldest segment still holds a batch: nothing is dropped
    assert len(_segments(tmp_path)) == 4
    spool.remove_many([handles[0], handles[2]])
    assert [path.name for path in _segments(tmp_path)] == ["000000000004.log"]  # the last batch's, with the DONE
    spool.close()
    again: SpoolLog[str] = SpoolLog(tmp_path, 1 << 20)
    assert [again.read(path) for path in again.waiting(10)] == [["x" * 100]]


def test_a_full_log_refuses_with_a_retry_hint_and_writes_nothing(tmp_path: Path) -> None:
    spool: SpoolLog[str] = SpoolLog(tmp_path, max_bytes=200)
    spool.append(["x"])
    with pytest.raises(RetryableError, match="spool is full") as caught:
        spool.append(["y" * 500])
    assert caught.value.retry_after > 0 and spool.batches == 1
    spool.close()
    assert SpoolLog(tmp_path, max_bytes=200).batches == 1


def test_concurrent_appends_share_syncs_and_all_come_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    syncs = []
    real = log_records.os.fdatasync

    def counted(fd: int) -> None:
        syncs.append(fd)
        real(fd)

    monkeypatch.setattr("spanscore.storage.write.log_segments.os.fdatasync", counted)
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 24, commit_window=0.005)

    def write(base: int) -> None:
        for index in range(50):
            spool.append([base + index])

    threads = [threading.Thread(target=write, args=(1000 * n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert spool.batches == 400 and len(syncs) < 400
    spool.close()
    values = sorted(value for batch in _drain(SpoolLog(tmp_path, 1 << 24)) for value in batch)
    assert values == sorted(1000 * n + index for n in range(8) for index in range(50))


def test_a_replay_intent_names_log_batches_until_they_are_removed(tmp_path: Path) -> None:
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    a, _ = spool.append([1])
    b, _ = spool.append([2])
    ReplayIntents(tmp_path, spool.holds).write([a, b], "ef" * 16)
    spool.remove(a)
    intent = ReplayIntents(tmp_path, spool.holds).read()
    assert intent is not None and intent.files == (b,) and intent.token == "ef" * 16


def test_a_second_writer_on_the_same_log_is_refused_naming_the_directory(tmp_path: Path) -> None:
    spool: SpoolLog[int] = SpoolLog(tmp_path, max_bytes=1 << 20)
    spool.append([1])
    with pytest.raises(RuntimeError, match="in use by another writer") as caught:
        SpoolLog(tmp_path, max_bytes=1 << 20)
    assert str(tmp_path) in str(caught.value) and spool.batches == 1
    spool.close()
    assert SpoolLog(tmp_path, max_bytes=1 << 20).batches == 1


@pytest.mark.parametrize("kind", [SpoolLog, Spool])
def test_a_batch_encoded_in_parts_is_written_as_the_one_array_they_make(tmp_path: Path, kind: type) -> None:
    """A large batch of spans is encoded 1,000 at a time and written part by part, never joined in memory first;
    on disk (and so after a restart) it is the JSON array ``records_to_json`` makes of the whole batch."""
    from spanscore.records import SpanRecord
    from spanscore.storage.rows import ENCODE_CHUNK, records_to_json
    from spanscore.storage.write.paths import SPAN_SPOOL_CODEC

    spans = [
        SpanRecord(f"{i:032x}", f"{i:016x}", "", "step", "Internal", i, i + 1, attributes={"i": str(i)})
        for i in range(2 * ENCODE_CHUNK + 7)
    ]
    spool = kind(tmp_path, 64 << 20, SPAN_SPOOL_CODEC)
    path, parts = spool.append(spans)
    assert len(parts) == 3  # kept in parts for the insert, which sends them as they are
    assert spool.read_encoded(path) == records_to_json(spans) == b"".join(SPAN_SPOOL_CODEC.layout(parts))
    spool.close()
    reopened = kind(tmp_path, 64 << 20, SPAN_SPOOL_CODEC)  # the log's checksum covers every part
    [again] = reopened.waiting(10)
    assert reopened.read(again) == spans


def test_a_record_of_more_buffers_than_one_write_takes_is_written_whole(tmp_path: Path) -> None:
    from spanscore.storage.write.log_segments import IOV_MAX, SegmentWriter

    writer = SegmentWriter(tmp_path, 1)
    buffers = [bytes([index % 251]) * 3 for index in range(2 * IOV_MAX + 5)]
    with writer.lock:
        segment, offset, ticket = writer.append(buffers)
    writer.wait_durable(ticket)
    writer.close()
    with open(tmp_path / log_records.segment_name(segment), "rb") as handle:
        handle.seek(offset)
        assert handle.read(3 * len(buffers)) == b"".join(buffers)
