"""A run no rule can select is not built in full (#43), and everything rules see of it stays the same.

Observed: with one rule that selects none of the traffic, readiness built every run in full (``RunFields.build``,
11 % of a service's samples) for runs every rule then decided ``filtered_out`` on their ids and root alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from bench.decision_rows import FIXTURES
from spanscore.collector.decode import logs_from_request, parse_logs, parse_traces, spans_from_request
from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Run
from spanscore.runs.assembly import run_fingerprint
from spanscore.runs.config import RunsConfig
from spanscore.runs.fields import RunFields
from spanscore.runs.readiness import ReadyRun, RunAssembler
from spanscore.runs.selection import completed_if_selected, run_selector
from spanscore.sampling.engine import RuleEngine
from spanscore.sampling.rules import RuleConfig, SamplingConfig
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.live import LiveScoring
from spanscore.scoring.rows import run_columns
from spanscore.scoring.subject import Subject
from spanscore.storage.scored_runs import ScoredRunRow, run_view
from spanscore.storage.scores import DecisionRow, RunColumns, ScoreRow

S = 1_000_000_000
NOTHING = RuleConfig.model_validate(
    {"name": "nothing", "where": {"service.name": "bench-scored"}, "scorers": ["completeness"]}
)
EVERYTHING = RuleConfig.model_validate({"name": "everything", "scorers": ["completeness"]})
BY_AGENT = RuleConfig.model_validate(
    {"name": "by-agent", "where": {"agent.name": "weather_agent"}, "scorers": ["completeness"]}
)


def _recorded(*names: str) -> tuple[list[SpanRecord], list[LogRecord]]:
    spans: list[SpanRecord] = []
    logs: list[LogRecord] = []
    for name in names:
        spans += spans_from_request(parse_traces((FIXTURES / f"{name}.traces.json").read_bytes(), json_body=True)).items
        logs_path = Path(FIXTURES / f"{name}.logs.json")
        if logs_path.exists():
            logs += logs_from_request(parse_logs(logs_path.read_bytes(), json_body=True)).items
    return spans, logs


RECORDED = ("openinference", "otel_genai_logs", "vercel_ai", "frameworks/crewai_openinference")


def _ready(rules: Sequence[RuleConfig] | None) -> list[ReadyRun]:
    """Every run of the recorded fixtures, ready; ``rules`` None builds every run as main did."""
    assembler = RunAssembler()
    if rules is not None:
        assembler.selects = run_selector(rules, assembler.config)
    spans, logs = _recorded(*RECORDED)
    assembler.add_spans(spans, 0)
    assembler.add_logs(logs, 0)
    ready = assembler.poll_ready(int(assembler.config.max_wait_s * S))
    assert len(ready) >= 4
    return ready


def _by_id(ready: list[ReadyRun]) -> dict[tuple[str, str], ReadyRun]:
    """By trace and run id: recordings of different frameworks reuse span ids."""
    return {(item.run.trace_id, item.run.run_id): item for item in ready}


def test_a_run_no_rule_can_select_is_handed_on_as_its_filter_view(monkeypatch: pytest.MonkeyPatch) -> None:
    full = _by_id(_ready(None))
    builds = 0
    build = RunFields.build

    def counted(self: RunFields) -> Run:
        nonlocal builds
        builds += 1
        return build(self)

    monkeypatch.setattr(RunFields, "build", counted)
    viewed = _by_id(_ready([NOTHING]))
    assert builds == 0
    assert viewed.keys() == full.keys()
    config = SamplingConfig(rules=[NOTHING, BY_AGENT])
    for run_id, item in viewed.items():
        whole = full[run_id]
        assert item.complete is not None and item.run.input is None and whole.run.input is not None, run_id
        assert (item.reason, item.too_large) == (whole.reason, whole.too_large)
        assert run_columns(item.run) == run_columns(whole.run)
        # Every rule decides alike on the view and on the run, whether it selects the run or not.
        assert RuleEngine(config).decide(item.run) == RuleEngine(config).decide(whole.run)


def test_a_run_some_rule_selects_is_built_in_full_as_before() -> None:
    full = _by_id(_ready(None))
    selected = _by_id(_ready([NOTHING, BY_AGENT]))
    for run_id, item in selected.items():
        whole = full[run_id]
        if whole.run.agent_name != "weather_agent":
            continue
        assert item.complete is None
        assert (run_view(item.run), item.fingerprint) == (run_view(whole.run), whole.fingerprint)


def test_a_view_completed_for_new_rules_is_the_run_main_built() -> None:
    full = _by_id(_ready(None))
    viewed = _ready([NOTHING])
    completed = completed_if_selected(viewed, run_selector([EVERYTHING], RunsConfig()))
    assert all(item.complete is None for item in completed)
    for item in completed:
        whole = full[item.run.trace_id, item.run.run_id]
        assert (run_view(item.run), item.fingerprint) == (run_view(whole.run), whole.fingerprint)
        assert item.fingerprint == run_fingerprint(item.run)
    untouched = completed_if_selected(viewed, run_selector([NOTHING], RunsConfig()))
    assert all(item.complete is not None for item in untouched)


@pytest.mark.parametrize(
    ("rule", "config"),
    [
        ({"name": "calls", "target": "llm", "scorers": ["completeness"]}, RunsConfig()),
        ({"name": "sessions", "target": "session", "scorers": ["turn_count"]}, RunsConfig()),
        ({"name": "runs", "scorers": ["completeness"]}, RunsConfig(late_span_policy="rescore")),
    ],
)
def test_every_run_is_built_when_a_rule_reads_more_than_the_run_or_late_spans_rescore(
    rule: dict[str, Any], config: RunsConfig
) -> None:
    """Span views and sessions are made from the full run; a rescore compares fingerprints of what scorers read."""
    assert run_selector([NOTHING, RuleConfig.model_validate(rule)], config) is None


def test_run_columns_are_every_column_of_run_columns() -> None:
    run = Run("q", "a", trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331", agent_name="x")
    assert list(run_columns(run)) == [field.name for field in fields(RunColumns)]


class _Rows:
    def __init__(self) -> None:
        self.decisions: list[DecisionRow] = []
        self.scored_runs: list[ScoredRunRow] = []

    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        return None

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        self.decisions.extend(rows)

    async def insert_scored_runs(self, rows: Sequence[ScoredRunRow]) -> None:
        self.scored_runs.extend(rows)


async def _swapped(monkeypatch: pytest.MonkeyPatch, patch: Callable[[LiveScoring], None]) -> _Rows:
    """The recorded fixtures made ready under a rule that selects nothing, with rules swapped (by ``patch``)
    for one that selects everything somewhere between readiness and the decision; the rows stored."""
    store = _Rows()
    runs = RunsConfig(quiet_period_s=0.0, max_wait_s=0.01)
    live = LiveScoring(store, [NOTHING], runs=runs, scoring=ScoringConfig(recover_on_start=False))  # type: ignore[arg-type]
    await live.start()
    try:
        await live.poller.stop()
        spans, logs = _recorded(*RECORDED)
        await live.spans_in.consume(spans)
        await live.logs_in.consume(logs)
        await asyncio.sleep(0.02)  # past max_wait
        patch(live)
        assert await live.poller.poll_once() >= 4
        await live.workers.drain()
    finally:
        await live.shutdown()
    return store


def _stored_in_full(store: _Rows) -> None:
    """Sampled (or already sampled under the same run id in another recording), never decided on a view."""
    full = _by_id(_ready(None))
    assert {row.decision for row in store.decisions} == {"sampled", "duplicate"}
    assert store.scored_runs
    for row in store.scored_runs:
        assert row.run_json == ScoredRunRow.of(full[row.trace_id, row.run_id].run).run_json


async def test_rules_changed_while_the_assembler_polled_score_full_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A swap of rules between readiness (under the old rules) and the dispatch (under the new ones)."""

    def patch(live: LiveScoring) -> None:
        poll = live.assembler.poll_ready

        def poll_then_swap(now_ns: int) -> list[ReadyRun]:
            ready = poll(now_ns)
            live.replace_rules([EVERYTHING])  # what a SIGHUP or a PUT of rules does on the loop meanwhile
            return ready

        monkeypatch.setattr(live.assembler, "poll_ready", poll_then_swap)

    store = await _swapped(monkeypatch, patch)
    _stored_in_full(store)
    sampled = [row for row in store.decisions if row.decision == "sampled"]
    assert len(store.scored_runs) == len(sampled) >= 2


async def test_rules_changed_during_a_fleets_claim_read_score_full_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a fleet the dispatcher reads the store's claims (an await) after readiness and before it decides: a swap
    of rules landing there met runs handed on as filter views."""

    def patch(live: LiveScoring) -> None:
        async def read_claims_then_swap(subjects: list[tuple[Subject, bool]]) -> list[tuple[Subject, bool]]:
            live.replace_rules([EVERYTHING])  # a PUT of rules handled on the loop while the store read waited
            return subjects

        monkeypatch.setattr(live.dispatcher.gate, "unclaimed", read_claims_then_swap)

    _stored_in_full(await _swapped(monkeypatch, patch))
