"""Run assembly's byte bounds count what holding a span takes in Python, not only its text (#43).

The text alone left the bench's small span at 415 estimated bytes against 1,283 of resident memory, so
``max_pending_bytes`` let run assembly hold three times what it said: under a scoring overload at the defaults the
service grew by 680-743 MB where tests/e2e/test_overload.py allows 600.
"""

from __future__ import annotations

import gc
import time
import tracemalloc

import pytest

from bench.payloads import build_template
from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import RunAssembler

UNBOUNDED = RunsConfig(max_pending_traces=10**7, max_pending_spans=10**8, max_pending_bytes=1 << 40)


@pytest.mark.parametrize(("llm", "requests"), [(False, 20), (True, 4)])
def test_the_estimate_of_held_spans_is_what_python_allocates_for_them(llm: bool, requests: int) -> None:
    """Decoded exports held by the assembler: its byte count is within 0.8-1.6x of the memory they take."""
    template = build_template(1000, llm)
    bodies = [template.encode(index) for index in range(requests)]
    assembler = RunAssembler(UNBOUNDED)
    gc.collect()
    tracemalloc.start()
    try:
        for body in bodies:
            assembler.add_spans(spans_from_request(parse_traces(body, json_body=False)).items, time.time_ns())
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimated = assembler.stats.pending_bytes
    assert assembler.stats.pending_spans == 1000 * requests
    assert 0.8 * held <= estimated <= 1.6 * held, (
        f"{'LLM-sized' if llm else 'small'} spans: estimated {estimated / assembler.stats.pending_spans:.0f} "
        f"bytes a span, Python holds {held / assembler.stats.pending_spans:.0f}"
    )
