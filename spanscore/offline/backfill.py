"""Preview and backfill: the sampling rules applied to runs already in storage.

Both read stored traces back into runs with the same assembler code as the
live path and decide with the same rule engine, so a preview says exactly what
live traffic would have done. Backfill scores through the live pipeline:
score ids are deterministic, so running it twice (or after an interruption)
rewrites the same rows instead of adding new ones, and runs already scored for
the rule are skipped, except runs whose score ended in an error (a judge outage):
those are scored again, so a backfill after the outage repairs them.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spanscore.errors import ConfigError
from spanscore.redaction.config import RedactConfig
from spanscore.redaction.redactor import Redactor
from spanscore.run import SPAN_TARGETS, Run, Turn
from spanscore.runs.assembly import assemble_runs
from spanscore.runs.config import RunsConfig
from spanscore.runs.recovery import StoredSpanSource
from spanscore.runs.sessions import session_view
from spanscore.sampling.engine import preview_run
from spanscore.sampling.rules import RuleConfig
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.backfill import already_decided, average_judge_cost, errored_runs

if TYPE_CHECKING:  # the judge client loads litellm; config loading imports this module and must not
    from spanscore.scorers.judge.current import Judge
    from spanscore.scoring.live import LiveScoring
    from spanscore.scoring.subject import Subject


def find_rule(rules: list[RuleConfig], name: str, where: str = "running rules") -> RuleConfig:
    """The rule called ``name``; the error says where it looked (the running rules, or a file's)."""
    for rule in rules:
        if rule.name == name:
            return rule
    known = ", ".join(r.name for r in rules) or "none"
    hint = " (preview a rule that is not applied yet with --file FILE)" if where == "running rules" else ""
    raise ConfigError(f"unknown rule {name!r}; {where}: {known}{hint}")


def stored_runs(
    store: ClickHouseStore, since_s: float, runs: RunsConfig, max_traces: int = 100_000, target: str = "run"
) -> list[Run]:
    """The stored subjects of a rule target from the last ``since_s`` seconds, built as the live path builds them.

    ``run``: the agent runs; ``llm``/``tool``/``retrieval``: those spans' views; ``session``: the runs
    grouped by session id into session views (their turns are the runs found in the window).
    """
    since_ns = time.time_ns() - int(since_s * 1e9)
    traces = list(StoredSpanSource(store, max_traces=max_traces).recent_traces(since_ns))
    spans = [span for trace in traces for span in trace.spans]
    logs = [record for trace in traces for record in trace.logs]
    span_targets = (target,) if target in SPAN_TARGETS else ()
    assembled = assemble_runs(spans, logs, runs, span_targets)
    if span_targets:
        return [view for item in assembled for view in item.views]
    if target == "session":
        return sessions_of([item.run for item in assembled])
    return [item.run for item in assembled]


def sessions_of(runs: list[Run]) -> list[Run]:
    """Session views of the runs that carry a session id, one per session, turns in start order."""
    grouped: dict[str, list[Run]] = {}
    for run in runs:
        if run.session_id:
            grouped.setdefault(run.session_id, []).append(run)
    views = []
    for session_id, members in grouped.items():
        last = max(members, key=lambda run: (run.start_time_ns, run.run_id))
        views.append(session_view(session_id, [Turn.of(run) for run in members], last))
    return views


@dataclass(frozen=True, slots=True)
class Preview:
    rule: str
    candidates: int
    matched: int
    sampled: int
    outcomes: dict[str, int]
    llm_scorers: int
    estimated_judge_calls: int
    estimated_cost_usd: float | None
    would_send: list[dict[str, Any]] = field(default_factory=list)
    """What the rule's judges would be sent for the newest sampled run, redacted (``judge_preview``)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "candidates": self.candidates,
            "matched": self.matched,
            "sampled": self.sampled,
            "outcomes": self.outcomes,
            "estimated_judge_calls": self.estimated_judge_calls,
            "estimated_cost_usd": self.estimated_cost_usd,
            "would_send": self.would_send,
        }


def preview(
    store: ClickHouseStore,
    rule: RuleConfig,
    since_s: float,
    runs: RunsConfig,
    judge: Judge | None = None,
    redactor: Redactor | None = None,
) -> Preview:
    """How many stored runs the rule matches and would sample, what the judge would cost and be sent."""
    from spanscore.offline.judge_preview import would_send  # scorer and judge modules: only when previewing
    from spanscore.redaction.scope import default_redactor
    from spanscore.scoring.live import build_rule_scorers

    candidates = stored_runs(store, since_s, runs, target=rule.target)
    outcomes: Counter[str] = Counter()
    newest_sampled: Run | None = None
    for run in candidates:
        outcome = preview_run([rule], run)[0].outcome.value
        outcomes[outcome] += 1
        if outcome == "sampled" and (newest_sampled is None or run.start_time_ns > newest_sampled.start_time_ns):
            newest_sampled = run
    scorers = build_rule_scorers([rule], judge)[rule.name]
    llm = [s for s in scorers if s.info.kind == "llm"]
    sampled = outcomes["sampled"]
    cost = average_judge_cost(store, rule.name, [s.info.id for s in llm])
    return Preview(
        rule=rule.name,
        candidates=len(candidates),
        matched=len(candidates) - outcomes["filtered_out"],
        sampled=sampled,
        outcomes=dict(outcomes),
        llm_scorers=len(llm),
        estimated_judge_calls=sampled * sum(scorer.judge_steps for scorer in llm),
        estimated_cost_usd=None if cost is None else round(cost * sampled, 6),
        would_send=[] if newest_sampled is None else would_send(llm, newest_sampled, redactor or default_redactor()),
    )


_CHUNK = 256  # runs decided per decision insert; one insert per run made backfill ~10x slower than live


@dataclass
class BackfillProgress:
    """Where a backfill stands, for the API, ``spanscore status`` and the CLI's progress line.

    ``cancel()`` asks the running backfill to stop after the chunk in flight; what it scored stays
    written, so a later backfill of the same rule resumes with the rest.
    """

    rule: str
    total: int = 0
    done: int = 0
    skipped: int = 0
    started: float = field(default_factory=time.monotonic)
    finished: bool = False
    cancelled: bool = False
    _cancel: bool = False

    def cancel(self) -> None:
        self._cancel = True

    @property
    def cancel_requested(self) -> bool:
        return self._cancel

    def as_dict(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        scored = self.done - self.skipped
        rate = scored / elapsed
        remaining = self.total - self.done
        eta = 0.0 if remaining <= 0 else (remaining / rate if rate > 0 else -1.0)
        return {
            "rule": self.rule,
            "done": self.done,
            "total": self.total,
            "rate_runs_per_s": round(rate, 1),
            "eta_s": round(eta, 1),
            "finished": self.finished,
            "cancelled": self.cancelled,
        }


async def _score_chunk(live: LiveScoring, subjects: list[Subject], progress: BackfillProgress) -> None:
    """Score one chunk, moving ``progress`` as each run's scorers end, not only when the whole chunk has.

    A chunk is one decision insert (up to ``_CHUNK`` runs): counted only at its end, a backfill of a few
    hundred runs through a slow judge showed the same figures, 0 runs/s, for minutes.
    """
    dispatcher, base = live.dispatcher, progress.done
    decided_before = dispatcher.subjects_decided
    work = asyncio.ensure_future(_dispatch_and_settle(live, subjects))
    try:
        while not work.done():
            await asyncio.wait({work}, timeout=0.2)
            ended = dispatcher.subjects_decided - decided_before - dispatcher.runs_in_flight
            progress.done = max(progress.done, base + min(len(subjects), max(0, ended)))
        await work
    finally:
        work.cancel()
    progress.done = base + len(subjects)


async def _dispatch_and_settle(live: LiveScoring, subjects: list[Subject]) -> None:
    await live.dispatch_subjects(subjects)
    await live.settle()


async def backfill(
    store: ClickHouseStore,
    rule: RuleConfig,
    since_s: float,
    runs: RunsConfig,
    scoring: Any = None,
    progress: BackfillProgress | None = None,
    judge: Judge | None = None,
    redact: RedactConfig | None = None,
) -> dict[str, Any]:
    """Score the stored runs of the last ``since_s`` seconds with ``rule``; safe to repeat or resume.

    ``redact`` is the config's policy: the rule's judges are sent what they would be sent live.

    Runs go to the live pipeline in chunks, so decisions are written one insert per chunk (as live
    scoring batches them) and cancellation is checked between chunks.
    """
    from spanscore.scoring.config import ScoringConfig
    from spanscore.scoring.live import LiveScoring
    from spanscore.scoring.subject import Subject

    progress = progress or BackfillProgress(rule.name)
    settings = (scoring or ScoringConfig()).model_copy(update={"recover_on_start": False})
    candidates = await asyncio.to_thread(stored_runs, store, since_s, runs, 100_000, rule.target)
    errored = await asyncio.to_thread(errored_runs, store, rule.name)
    # An errored score is not a score: runs whose score ended in an error (a judge outage, a timeout) are
    # scored again, and the new rows replace the errored ones (same score ids).
    done = await asyncio.to_thread(already_decided, store, rule.name) - errored
    todo = [run for run in candidates if run.run_id not in done]
    progress.total, progress.skipped = len(candidates), len(candidates) - len(todo)
    progress.done, progress.started = progress.skipped, time.monotonic()
    live = LiveScoring(store, [rule], runs=runs, scoring=settings, judge=judge, redact=redact)
    await live.start()
    try:
        for start in range(0, len(todo), _CHUNK):
            if progress.cancel_requested:
                progress.cancelled = True
                break
            chunk = todo[start : start + _CHUNK]
            await _score_chunk(live, [Subject(run, "backfill") for run in chunk], progress)
    finally:
        await live.shutdown()
        progress.finished = True
    return {
        "candidates": len(candidates),
        "skipped_already_scored": progress.skipped,
        "rescored_after_errors": sum(1 for run in todo[: progress.done - progress.skipped] if run.run_id in errored),
        "decisions_written": sum(live.decisions_written.values()),
        "scores_written": sum(live.scores_written.values()),
        "cancelled": progress.cancelled,
        "progress": progress.as_dict(),
    }
