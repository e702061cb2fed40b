"""Live scoring: ready runs -> sampling rules -> scoring jobs -> scores and decisions in storage.

Spans reach the run assembler only after they are stored (the span writer's
``on_stored`` hook), so a run that is scored is always a run that can be read
back. A poll loop asks the assembler for ready runs, asks the rule engine for
one decision per rule, writes every decision (the coverage denominator), and
queues one job per scorer of each sampled rule. When all of a rule's jobs for
a run have ended, a decision that was ``sampled`` is refined to
``missing_input`` / ``not_applicable`` / ``failed`` if no scorer produced a
score. Scores are written with their deterministic id and the inclusion
probability they were drawn with.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from spanscore.errors import ConfigError, RetryableError
from spanscore.export.forward import INTERNAL_ATTRIBUTE, ScoreExporter
from spanscore.metric_keys import metric_key
from spanscore.records import LogRecord, SpanRecord
from spanscore.run import SPAN_TARGETS, Run, Turn
from spanscore.runs.assembly import run_fingerprint
from spanscore.runs.config import RunsConfig, SessionsConfig
from spanscore.runs.readiness import ReadyRun, RunAssembler
from spanscore.runs.recovery import StoredSpanSource, session_turns, spend_since, unscored_sessions
from spanscore.runs.sessions import ReadySession, SessionTracker, with_history
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.sampling.engine import RuleEngine
from spanscore.sampling.rule_sets import rule_set_version
from spanscore.sampling.rules import RuleConfig, SamplingConfig
from spanscore.scorers.base import Scorer, ScoreResult, Status
from spanscore.scorers.judge.tracing import JUDGE_SPAN_ATTRIBUTE
from spanscore.scorers.registry import build
from spanscore.scoring.workers import ScoringJob, ScoringWorkers
from spanscore.storage.clickhouse import ClickHouseStore, is_embedded
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow, score_id
from spanscore.storage.writer import BatchWriter

if TYPE_CHECKING:  # the judge client loads litellm; config loading imports this module and must not
    from spanscore.scorers.judge.client import Judge

log = logging.getLogger(__name__)


class ScoringConfig(BaseModel):
    """The scoring stage: worker pool, retries and how scores are labelled."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    workers: int = Field(8, ge=1)
    """Concurrent scoring jobs (LLM judges are limited further by judge.max_concurrency)."""
    queue_size: int = Field(1000, ge=1)
    """Jobs waiting for a worker; when full, ready runs wait in the assembler (bounded there)."""
    max_attempts: int = Field(4, ge=1)
    """Attempts per job for retryable failures (judge timeouts, 429/5xx)."""
    code_threads: int = Field(2, ge=1)
    """Threads that run code scorers off the event loop."""
    poll_interval_s: float = Field(0.2, gt=0, le=10)
    """How often the assembler is asked for ready runs."""
    pass_threshold: float = Field(0.5, ge=0)
    """Label a score `pass` when at least this (or at most this, for lower-is-better scorers), else `fail`."""
    drain_timeout_s: float = Field(20.0, ge=0)
    """At shutdown, how long queued scoring jobs may run before they are cut (and rescored after restart); shorter
    than ``shutdown_timeout_s``, so that scores and spans are still flushed and the process exits 0."""
    recover_on_start: bool = True
    """Re-read recent traces on start (max_wait + late_span_window) so runs pending at a crash are still scored."""


@dataclass(frozen=True, slots=True)
class Subject:
    """One thing rules decide on: a run, a span-level view of one, or a session; why it is ready now."""

    run: Run
    ready_reason: str
    fingerprint: str = ""
    """The readiness fingerprint when the assembler made one (runs); otherwise computed only if a score is written."""


@dataclass(slots=True)
class _RuleRun:
    """Bookkeeping for one rule on one subject: how many jobs are out and how they ended."""

    decision: Decision
    subject: Subject
    outstanding: int
    statuses: Counter[str] = field(default_factory=Counter)
    rule_version: str = ""


def build_rule_scorers(rules: Sequence[RuleConfig], judge: Judge | None = None) -> dict[str, list[Scorer]]:
    """Build every configured scorer once, at start-up; LLM scorers with ``judge`` (its config and client).

    An unknown scorer or option, or a scorer paired with a target it cannot score, is refused naming its rule.
    """
    if judge is None:
        return _build_rule_scorers(rules)
    from spanscore.scorers.judge.client import using_judge  # loads litellm: only when there is a judge to use

    with using_judge(judge):
        return _build_rule_scorers(rules)


def _build_rule_scorers(rules: Sequence[RuleConfig]) -> dict[str, list[Scorer]]:
    built: dict[str, list[Scorer]] = {}
    problems: list[str] = []
    for index, rule in enumerate(rules):
        built[rule.name] = []
        for position, spec in enumerate(rule.scorers):
            try:
                scorer = build(spec.name, **spec.options)
            except ConfigError as exc:
                problems.append(f"rules[{index}].scorers[{position}] ({spec.name}): {exc}")
                continue
            if rule.target not in scorer.info.targets:
                problems.append(
                    f"rules[{index}].scorers[{position}]: rule {rule.name!r} has target {rule.target!r}, which scorer "
                    f"{spec.name!r} cannot score (it scores: {', '.join(scorer.info.targets)})"
                )
            built[rule.name].append(scorer)
    if problems:
        raise ConfigError("config: " + "; ".join(problems))
    return built


class LiveScoring:
    def __init__(
        self,
        store: ClickHouseStore,
        rules: Sequence[RuleConfig],
        *,
        runs: RunsConfig | None = None,
        sessions: SessionsConfig | None = None,
        scoring: ScoringConfig | None = None,
        batch_max: int = 5000,
        flush_interval: float = 0.05,
        exporter: ScoreExporter | None = None,
        judge: Judge | None = None,
        writers: tuple[BatchWriter[ScoreRow], BatchWriter[DecisionRow], BatchWriter[ScoredRunRow]] | None = None,
    ) -> None:
        """Build the stage; ``writers`` are the durable score and decision write paths.

        The service passes spooled ones (``storage.write_paths``); without them, plain in-memory
        writers are used (backfill, tests).
        """
        self._exporter = exporter
        self.config = scoring or ScoringConfig()
        self._store = store
        self.engine = RuleEngine(SamplingConfig(rules=list(rules)))
        self.assembler = RunAssembler(runs)
        self.sessions = SessionTracker(sessions)
        self.judge = judge
        self.scorers = build_rule_scorers(rules, judge)
        self.rule_version = rule_set_version(rules)
        self._set_targets(rules)
        if writers is None:
            writers = (
                BatchWriter(
                    "scores",
                    store.insert_scores,
                    batch_max=batch_max,
                    flush_interval=flush_interval,
                    max_pending=100_000,
                ),
                BatchWriter(
                    "decisions",
                    store.insert_decisions,
                    batch_max=batch_max,
                    flush_interval=flush_interval,
                    max_pending=100_000,
                ),
                BatchWriter(
                    "scored_runs",
                    store.insert_scored_runs,
                    batch_max=batch_max,
                    flush_interval=flush_interval,
                    max_pending=100_000,
                ),
            )
        self.score_writer: BatchWriter[ScoreRow] = writers[0]
        self.decision_writer: BatchWriter[DecisionRow] = writers[1]
        # What the scorers received, one row per scored run (see spanscore.storage.scored_runs).
        self.run_writer: BatchWriter[ScoredRunRow] = writers[2]
        self.workers: ScoringWorkers[_RuleRun] = ScoringWorkers(
            self._on_result,
            workers=self.config.workers,
            queue_size=self.config.queue_size,
            max_attempts=self.config.max_attempts,
            code_threads=self.config.code_threads,
            drain_timeout_s=self.config.drain_timeout_s,
        )
        self._poller: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.scores_written: Counter[tuple[str, str]] = Counter()  # (rule, status)
        self.decisions_written: Counter[str] = Counter()
        self.write_retries = 0
        self.internal_runs_skipped = 0
        # Score rows are written in the background so workers move on; a crash before a row lands
        # leaves a sampled decision without a score, which recovery scores again.
        self._score_writes: set[asyncio.Task[None]] = set()
        self._score_write_slots = asyncio.Semaphore(10_000)

    def replace_rules(self, rules: Sequence[RuleConfig]) -> None:
        """Score with ``rules`` from the next dispatch on; ``ConfigError`` (and no change) if any scorer fails to build.

        The swap happens between two dispatches on the event loop: a run is decided and its jobs are made
        under one set, and jobs already queued finish with the scorers and the version they started with.
        Caps and budgets of unchanged rules carry on (``RuleEngine.with_rules``).
        """
        scorers = build_rule_scorers(rules, self.judge)
        engine = self.engine.with_rules(SamplingConfig(rules=list(rules)))
        self.engine, self.scorers, self.rule_version = engine, scorers, rule_set_version(rules)
        self._set_targets(rules)

    def _set_targets(self, rules: Sequence[RuleConfig]) -> None:
        """Ask the assembler for the span views the rules score, and follow sessions only when a rule scores them."""
        targets = {rule.target for rule in rules}
        self.assembler.span_targets = frozenset(targets & set(SPAN_TARGETS))
        self.scores_sessions = "session" in targets

    # -- intake (called by the span and log writers after a successful insert) -------------------

    def on_spans_stored(self, spans: Sequence[SpanRecord]) -> None:
        self.assembler.add_spans(spans, time.time_ns())

    def on_logs_stored(self, logs: Sequence[LogRecord]) -> None:
        self.assembler.add_logs(logs, time.time_ns())

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.score_writer.start()
        await self.decision_writer.start()
        await self.run_writer.start()
        await self.workers.start()
        if self.config.recover_on_start:
            source = StoredSpanSource(self._store)
            recovered = await asyncio.to_thread(self.assembler.recover, source, time.time_ns())
            if recovered:
                log.info("recovered pending traces from storage count=%d", recovered)
            await asyncio.to_thread(self._restore_budgets)
            if self.scores_sessions:
                await asyncio.to_thread(self._restore_sessions)
        self._stopping.clear()
        self._poller = asyncio.create_task(self._poll_loop(), name="live-scoring-poll")

    def _restore_budgets(self) -> None:
        """Budgets go on from today's recorded spend instead of from zero after a restart.

        Only with the embedded store, which one process owns: with a ClickHouse server several replicas
        may write ``scores``, each with its own share of the budget, and the rows do not say whose spend
        they are, so a replica restarts its share at zero (see docs/deployment.md).
        """
        day_start = self.engine.budget_day_start()
        if day_start is None or not is_embedded(self._store.dsn):
            return
        rules = [rule.name for rule in self.engine.config.rules if rule.budget is not None]
        for rule, (usd, tokens, runs) in spend_since(self._store, rules, int(day_start * 1e9)).items():
            self.engine.restore_spend(rule, usd, tokens, runs)
            log.info("restored today's judge spend rule=%s usd=%.4f tokens=%d runs=%d", rule, usd, tokens, runs)

    def _restore_sessions(self) -> None:
        """Sessions open when the process stopped come back from their stored turns.

        They are ready after the quiet period, and their earlier turns are read again then (``needs_history``).
        """
        config = self.sessions.config
        lookback_s = max(2 * config.quiet_period_s, config.keep_scored_s)
        runs = unscored_sessions(self._store, time.time_ns() - int(lookback_s * 1e9))
        restored = self.sessions.restore(runs, time.time_ns())
        if restored:
            log.info("recovered open sessions from storage count=%d", restored)

    async def shutdown(self) -> None:
        """Stop polling, finish queued jobs, flush scores and decisions; idempotent."""
        self._stopping.set()
        if self._poller is not None:
            await self._poller
            self._poller = None
        await self.workers.shutdown()
        while self._score_writes:
            await asyncio.gather(*list(self._score_writes), return_exceptions=True)
        await self.score_writer.shutdown()
        await self.decision_writer.shutdown()
        await self.run_writer.shutdown()
        if self._exporter is not None:
            await asyncio.to_thread(self._exporter.shutdown)

    async def flush_ready(self) -> int:
        """Dispatch everything ready now and wait for its scores (tests and backfill use this)."""
        count = await self._dispatch_ready()
        await self.settle()
        return count

    async def _poll_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                await self._dispatch_ready()
            except Exception:
                log.exception("live scoring poll failed")
            try:
                await asyncio.wait_for(self._stopping.wait(), self.config.poll_interval_s)
            except TimeoutError:
                pass

    async def _dispatch_ready(self) -> int:
        ready = self.assembler.poll_ready(time.time_ns())
        await self.dispatch_many(ready)
        if self.scores_sessions:
            sessions = self.sessions.poll_ready(time.time_ns())
            if sessions:
                await self.dispatch_sessions(sessions)
        return len(ready)

    async def dispatch(self, ready: ReadyRun) -> None:
        await self.dispatch_many([ready])

    async def dispatch_many(self, items: Sequence[ReadyRun]) -> None:
        """Decide every run (and its span views), write all decisions in one insert, then queue the jobs.

        Decisions are durable before any job starts, so a crash mid-job leaves a ``sampled``
        decision without a score, which recovery scores again. A run with a session id becomes a
        turn of its session when a rule scores sessions (and is stored as one, for recovery).
        """
        subjects: list[tuple[Subject, bool]] = []
        turns: list[ScoredRunRow] = []
        now = time.time_ns()
        for ready in items:
            if _is_internal(ready.run):
                self.internal_runs_skipped += 1
                continue
            rescore = ready.reason == "late_span_rescore"
            subjects.append((Subject(ready.run, ready.reason, ready.fingerprint), rescore))
            subjects.extend((Subject(view, ready.reason), False) for view in ready.views)
            if self.scores_sessions and self.sessions.add(ready.run, now):
                turns.append(ScoredRunRow.of(ready.run))
        await self._dispatch_subjects(subjects, turns)

    async def dispatch_sessions(self, items: Sequence[ReadySession]) -> None:
        """Decide and score ready sessions; a session whose earlier turns may be in storage only reads them first."""
        subjects = []
        for ready in items:
            if ready.needs_history:
                ready = with_history(ready, await asyncio.to_thread(self._stored_turns, ready.run))
            subjects.append((Subject(ready.run, ready.reason), ready.reason == "session_continued"))
        await self._dispatch_subjects(subjects, [])

    def _stored_turns(self, session: Run) -> list[Turn]:
        since = session.start_time_ns - int(self.sessions.config.max_duration_s * 1e9)
        try:
            return session_turns(self._store, session.run_id, since)
        except Exception:  # storage down: score the turns held rather than hold the session back
            log.warning("could not read earlier turns session_id=%s", session.run_id, exc_info=True)
            return []

    async def dispatch_subjects(self, subjects: Sequence[Subject]) -> None:
        """Decide and score subjects built elsewhere (backfill: stored runs, span views or sessions)."""
        await self._dispatch_subjects([(subject, False) for subject in subjects], [])

    async def _dispatch_subjects(self, subjects: Sequence[tuple[Subject, bool]], stored: list[ScoredRunRow]) -> None:
        rows: list[DecisionRow] = []
        jobs: list[ScoringJob[_RuleRun]] = []
        scored: dict[tuple[str, str], ScoredRunRow] = {(row.trace_id, row.run_id): row for row in stored}
        for subject, rescore in subjects:
            run = subject.run
            decisions = self.engine.decide(run, rescore=rescore)
            rows.extend(_decision_row(d, subject, rule_version=self.rule_version) for d in decisions)
            for decision in decisions:
                if not decision.sampled:
                    continue
                scorers = self.scorers.get(decision.rule, [])
                book = _RuleRun(decision, subject, outstanding=len(scorers), rule_version=self.rule_version)
                jobs.extend(ScoringJob(decision.rule, scorer, run, context=book) for scorer in scorers)
                key = (run.trace_id, run.run_id)
                if scorers and run.target != "session" and key not in scored:  # a session turn is stored already
                    scored[key] = ScoredRunRow.of(run)
        if rows:
            await self._write_decisions(rows)
        if scored:
            await self._write(self.run_writer, list(scored.values()))  # type: ignore[arg-type]
        for job in jobs:
            await self.workers.submit(job)

    # -- results ----------------------------------------------------------------------------------

    async def _on_result(self, job: ScoringJob[_RuleRun], result: ScoreResult) -> None:
        book = job.context
        row = self._score_row(job.scorer, job.run, book, result)
        await self._score_write_slots.acquire()
        task = asyncio.create_task(self._write_score(row))
        self._score_writes.add(task)
        task.add_done_callback(self._score_writes.discard)
        self.scores_written[book.decision.rule, result.status.value] += 1
        if self._exporter is not None and result.status is Status.OK:
            self._exporter.export(row)
        tokens = result.input_tokens + result.output_tokens
        if result.cost_usd or tokens:
            # Both units: a rule's budget counts the one it is set in (daily_usd or daily_tokens).
            self.engine.record_spend(book.decision.rule, result.cost_usd, tokens=tokens)
        book.statuses[result.status.value] += 1
        book.outstanding -= 1
        if book.outstanding == 0:
            refined = _refine(book)
            if refined is not None:
                await self._write_decisions(
                    [_decision_row(book.decision, book.subject, refined, rule_version=book.rule_version)]
                )

    async def _write_score(self, row: ScoreRow) -> None:
        try:
            await self._write(self.score_writer, [row])
        finally:
            self._score_write_slots.release()

    async def settle(self) -> None:
        """Wait for every queued job and every score row already handed to storage."""
        await self.workers.drain()
        while self._score_writes:
            await asyncio.gather(*list(self._score_writes), return_exceptions=True)

    def _score_row(self, scorer: Scorer, run: Run, book: _RuleRun, result: ScoreResult) -> ScoreRow:
        info = scorer.info
        attributes = {"run.fingerprint": book.subject.fingerprint or run_fingerprint(run)}
        if run.parent_run_id:
            attributes["run.id"] = run.parent_run_id
        if run.turns is not None:
            attributes["session.turns"] = str(len(run.turns))
        # A session is identified by its id, not by the run it currently ends with: a rescore replaces.
        trace_key, span_key = ("session", run.run_id) if run.target == "session" else (run.trace_id, run.span_id)
        return ScoreRow(
            score_id=score_id(book.decision.rule, info.id, info.version, trace_key, span_key),
            run_timestamp_ns=run.start_time_ns,
            trace_id=run.trace_id,
            span_id=run.span_id,
            run_id=run.run_id,
            service_name=run.service_name or "",
            agent_name=run.agent_name or "",
            model=run.model or "",
            session_id=run.session_id or "",
            user_id=run.user_id or "",
            rule=book.decision.rule,
            scorer=info.id,
            scorer_version=info.version,
            score=result.score if result.status is Status.OK else None,
            label=self._label(result, info.higher_is_better),
            reason=result.reason or "",
            status=result.status.value,
            error=result.error or ", ".join(result.missing_fields),
            sample_rate=book.decision.probability,
            higher_is_better=info.higher_is_better,
            judge_model=result.judge_model or "",
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cost_usd=result.cost_usd,
            duration_ms=result.duration_ms,
            ready_reason=book.subject.ready_reason,
            run_duration_ms=max(0, run.end_time_ns - run.start_time_ns) / 1e6,
            run_error=run.error or "",
            attributes=attributes,
            rule_version=book.rule_version,
            target=run.target,
        )

    def _label(self, result: ScoreResult, higher_is_better: bool) -> str:
        if result.status is not Status.OK or result.score is None:
            return result.status.value
        threshold = self.config.pass_threshold
        passed = result.score >= threshold if higher_is_better else result.score <= threshold
        return "pass" if passed else "fail"

    async def _write_decisions(self, rows: list[DecisionRow]) -> None:
        await self._write(self.decision_writer, rows)
        for row in rows:
            self.decisions_written[row.decision] += 1

    async def _write(self, writer: BatchWriter[ScoreRow] | BatchWriter[DecisionRow], rows: list) -> None:  # type: ignore[type-arg]
        """Write until durable: a score or decision is never given up.

        With the service's writers a storage outage is absorbed by the spool, so this loop only turns
        when the spool is full, storage fails without a spool, or the writer is full; then it waits
        with backoff, and the wait is the backpressure: score writes hold worker slots, the workers'
        queue fills, and ready runs stay in the assembler until storage takes rows again.
        """
        delay = 0.2
        while True:
            try:
                await writer.consume(rows)
                return
            except RetryableError as exc:
                self.write_retries += 1
                if self.write_retries % 50 == 1:
                    log.warning("waiting to write %s rows=%d error=%s", writer.name, len(rows), exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {
            "scoring_queue_depth": self.workers.depth,
            "scoring_write_retries": self.write_retries,
            "runs_pending_traces": self.assembler.stats.pending_traces,
            "runs_evicted_traces": self.assembler.stats.evicted_traces,
            "runs_ready": self.assembler.stats.runs_ready,
            "sessions_open": self.sessions.stats.open_sessions,
            "sessions_kept": self.sessions.stats.kept_sessions,
            "sessions_turns_held": self.sessions.stats.held_turns,
            "sessions_ready": self.sessions.stats.sessions_ready,
            "sessions_rescored": self.sessions.stats.sessions_rescored,
            "sessions_evicted": self.sessions.stats.sessions_evicted,
            "sessions_continued_ignored": self.sessions.stats.continued_ignored,
            "sessions_turns_dropped": self.sessions.stats.turns_dropped,
        }
        for state, count in self.workers.states.items():
            out[f"scoring_jobs_{state}"] = count
        for (rule, status), count in self.scores_written.items():
            out[metric_key("scores_written", rule=rule, status=status)] = count
        for decision, count in self.decisions_written.items():
            out[metric_key("decisions_written", decision=decision)] = count
        return out


def _is_internal(run: Run) -> bool:
    """Runs made of spanscore's own evaluation spans and judge calls are never scored (no loops).

    The exporter marks its resource and its evaluation spans; judge-call spans carry their own attribute.
    """
    return any(
        attributes.get(INTERNAL_ATTRIBUTE) == "true" or attributes.get(JUDGE_SPAN_ATTRIBUTE) == "true"
        for attributes in (run.attributes, run.resource_attributes)
    )


def _refine(book: _RuleRun) -> Outcome | None:
    """A sampled rule-run that produced no score at all is recorded with why."""
    if book.statuses[Status.OK.value]:
        return None
    for status, outcome in (
        (Status.ERROR.value, Outcome.FAILED),
        (Status.MISSING_INPUT.value, Outcome.MISSING_INPUT),
        (Status.NOT_APPLICABLE.value, Outcome.NOT_APPLICABLE),
    ):
        if book.statuses[status]:
            return outcome
    return None


def _decision_row(
    decision: Decision, subject: Subject, outcome: Outcome | None = None, *, rule_version: str = ""
) -> DecisionRow:
    run = subject.run
    return DecisionRow(
        run_timestamp_ns=run.start_time_ns,
        trace_id=run.trace_id,
        span_id=run.span_id,
        run_id=run.run_id,
        service_name=run.service_name or "",
        agent_name=run.agent_name or "",
        rule=decision.rule,
        decision=(outcome or decision.outcome).value,
        probability=decision.probability,
        reason=decision.reason,
        ready_reason=subject.ready_reason,
        rule_version=rule_version,
        target=run.target,
    )
