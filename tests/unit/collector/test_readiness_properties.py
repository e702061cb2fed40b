"""Property: whatever the arrival order and batching, a run is ready exactly once, at the documented moment."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from recorded_traces import RECORDED, load

from spanscore.runs.assembly import run_fingerprint, runs_from_spans
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import RunAssembler

S = 1_000_000_000
T0 = 1_767_225_600 * S
FIXTURES = {name: load(name) for name in RECORDED}


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(RECORDED),
    order=st.randoms(use_true_random=False),
    cuts=st.lists(st.integers(0, 20), max_size=6),
    gaps=st.lists(st.integers(0, 1_900), min_size=8, max_size=8),
)
def test_ready_once_at_quiet_period_after_the_last_arrival(
    name: str, order: random.Random, cuts: list[int], gaps: list[int]
) -> None:
    spans, logs = FIXTURES[name]
    shuffled = list(spans)
    order.shuffle(shuffled)
    bounds = sorted({min(cut, len(shuffled)) for cut in cuts} | {0, len(shuffled)})
    batches = [shuffled[start:end] for start, end in zip(bounds, bounds[1:], strict=False) if end > start]
    assembler = RunAssembler(RunsConfig(quiet_period_s=2, max_wait_s=60))
    now = T0
    assembler.add_logs(logs, now)
    ready = []
    for index, batch in enumerate(batches):
        now += gaps[index % len(gaps)] * 1_000_000  # gaps shorter than the quiet period
        assembler.add_spans(batch, now)
        ready += assembler.poll_ready(now)
    assert ready == []
    assert assembler.poll_ready(now + 2 * S - 1) == []
    ready = assembler.poll_ready(now + 2 * S)
    expected = runs_from_spans(spans, logs)
    assert [(item.reason, item.fingerprint) for item in ready] == [
        ("quiet_period", run_fingerprint(run)) for run in expected
    ]
    assert ready[0].run.sources == expected[0].sources
    assert assembler.poll_ready(now + 120 * S) == []
