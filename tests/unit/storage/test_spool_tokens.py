"""Each spooled batch keeps the deduplication token its inserts carry, and a merged replay records its set first."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from spanscore.pipeline import Calling
from spanscore.storage.insert_token import new_token, token_settings
from spanscore.storage.write.replay_intent import ReplayIntents
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig


class TokenRecorder:
    """An insert that keeps which rows arrived under which token, as the engine would compare them."""

    def __init__(self) -> None:
        self.inserts: list[tuple[str, list[int]]] = []

    async def insert(self, records: Sequence[int]) -> None:
        self.inserts.append((token_settings().get("insert_deduplication_token", ""), list(records)))


def test_numbers_start_again_at_one_but_tokens_never_repeat(tmp_path: Path) -> None:
    spool: Spool[int] = Spool(tmp_path, 1 << 20)
    first, _ = spool.append([1])
    spool.remove(first)
    again: Spool[int] = Spool(tmp_path, 1 << 20)  # the directory emptied: numbering starts over
    second, _ = again.append([1])
    assert first.name[:12] == second.name[:12] == "000000000001"
    assert re.fullmatch(r"[0-9a-f]{32}", Spool.token(second)) and Spool.token(first) != Spool.token(second)
    kept, _ = again.append([2], token="ab" * 16)  # a batch whose insert was tried keeps that insert's token
    assert Spool.token(kept) == "ab" * 16


def test_a_batch_spooled_before_tokens_is_given_one_when_the_spool_opens(tmp_path: Path) -> None:
    legacy: Spool[int] = Spool(tmp_path, 1 << 20)
    path, _ = legacy.append([7])
    path.rename(tmp_path / "000000000009.batch")
    reopened: Spool[int] = Spool(tmp_path, 1 << 20)
    (renamed,) = reopened.waiting(10)
    assert renamed.name.startswith("000000000009-") and reopened.read(renamed) == [7]
    assert reopened.append([8])[0].name.startswith("000000000010-")
    with pytest.raises(ValueError, match="not a spool batch file"):
        Spool.token(tmp_path / "000000000009.batch")


async def test_a_recorded_merged_insert_is_replayed_first_with_its_token_and_only_its_files(tmp_path: Path) -> None:
    """After a crash between a merged insert and its deletes (one file already deleted), the set goes again."""
    spool: Spool[int] = Spool(tmp_path, 1 << 20)
    a, _ = spool.append([1])
    b, _ = spool.append([2])
    c, _ = spool.append([3])
    token = new_token()
    ReplayIntents(tmp_path).write([a, b], token)
    spool.remove(a)
    store = TokenRecorder()
    config = WriterConfig(batch_max=10, flush_interval=0.0, max_pending=10)
    writer: BatchWriter[int] = BatchWriter("t", Inserts(Calling(store.insert)), config, spool=Spool(tmp_path, 1 << 20))
    await writer.start()
    await writer.shutdown()
    assert store.inserts == [(token, [2]), (Spool.token(c), [3])]
    assert ReplayIntents(tmp_path).read() is None and not spool.waiting(10)


def test_an_unreadable_intent_stops_the_writer_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "replay.intent").write_text('{"token": "nope", "files": []}')
    with pytest.raises(RuntimeError, match=r"replay\.intent cannot be read"):
        config = WriterConfig(batch_max=1, flush_interval=0, max_pending=1)
        BatchWriter("t", Inserts(Calling(TokenRecorder().insert)), config, spool=Spool(tmp_path, 1))
