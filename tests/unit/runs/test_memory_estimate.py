"""Run assembly's byte bounds count what holding a span takes in Python, not only its text (#43).

The text alone left the bench's small span at 415 estimated bytes against 1,283 of resident memory, so
``max_pending_bytes`` let run assembly hold three times what it said: under a scoring overload at the defaults the
service grew by 680-743 MB where tests/e2e/test_overload.py allows 600.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Iterator

import pytest

from bench.payloads import build_template
from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.records import SpanEvent, SpanRecord
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import RunAssembler

UNBOUNDED = RunsConfig(max_pending_traces=10**7, max_pending_spans=10**8, max_pending_bytes=1 << 40)


def _held(batches: Iterator[list[SpanRecord]]) -> tuple[RunAssembler, int]:
    """An assembler holding every batch made (made while traced), and the bytes Python allocated for them."""
    assembler = RunAssembler(UNBOUNDED)
    gc.collect()
    tracemalloc.start()
    try:
        for batch in batches:
            assembler.add_spans(batch, time.time_ns())
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return assembler, held


@pytest.mark.parametrize(("llm", "requests"), [(False, 20), (True, 4)])
def test_the_estimate_of_held_spans_is_what_python_allocates_for_them(llm: bool, requests: int) -> None:
    """Decoded exports held by the assembler: its byte count is within 0.8-1.6x of the memory they take."""
    template = build_template(1000, llm)
    bodies = [template.encode(index) for index in range(requests)]
    assembler, held = _held(spans_from_request(parse_traces(body, json_body=False)).items for body in bodies)
    estimated = assembler.stats.pending_bytes
    assert assembler.stats.pending_spans == 1000 * requests
    assert 0.8 * held <= estimated <= 1.6 * held, (
        f"{'LLM-sized' if llm else 'small'} spans: estimated {estimated / assembler.stats.pending_spans:.0f} "
        f"bytes a span, Python holds {held / assembler.stats.pending_spans:.0f}"
    )


def _span(index: int, text: str) -> SpanRecord:
    """A span with strings of its own, as decoding makes them: five attributes, an event, text in ``text``'s script."""
    attributes = {f"app.field.{key}": f"{text} {index} {key} " * 8 for key in range(5)}
    event = SpanEvent(index, "gen_ai.choice", {"gen_ai.message": f"{text} {index} " * 20})
    return SpanRecord(f"{index // 10:032x}", f"{index + 1:016x}", "", f"chat {index % 7}", "Client", index, index + 9,
                      "svc", attributes, events=(event,))  # fmt: skip


@pytest.mark.parametrize("text", ["plain ascii words", "値段とユーザーの質問", "emoji 🙂 in a reply"])
def test_text_is_counted_as_python_stores_it(text: str) -> None:
    """CJK text takes 2 bytes a character and text with an emoji 4: counting characters undercounted them 0.4-0.7x."""
    assembler, held = _held(
        [_span(index, text) for index in range(start, start + 1000)] for start in range(0, 20_000, 1000)
    )
    estimated = assembler.stats.pending_bytes
    assert 0.8 * held <= estimated <= 1.6 * held, f"{text!r}: estimated {estimated:,} bytes, Python holds {held:,}"
