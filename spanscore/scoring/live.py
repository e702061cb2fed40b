"""Live scoring, assembled: stored spans -> runs -> ready runs -> decisions and jobs -> scores in storage.

The pieces, each a ``Consumer`` of the one before (see ``spanscore.pipeline``):

- ``StoredSpans`` / ``StoredLogs`` (runs/intake.py): what the span and log writers stored joins the
  assembler's open traces, so a run that is scored is always a run that can be read back;
- ``ReadyPoller``: asks the assembler and the session tracker what is ready now;
- ``Dispatcher`` / ``SessionDispatch``: one decision per rule, decisions durable before any job starts,
  one job per scorer of each sampled rule, on its worker pool;
- score rows to ``InBackground(UntilDurable(score writer))`` and the exporter; decisions and scored-run
  rows to their own durable writers.

``LiveScoring`` builds them, starts and stops them in order, swaps rules at run time, recovers what a
crash left pending, and reports their metrics.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from spanscore.errors import ConfigError
from spanscore.export.forward import ScoreExporter
from spanscore.metric_keys import metric_key
from spanscore.pipeline import Calling, Consumer, FanOut
from spanscore.redaction.config import RedactConfig, RedactionPolicies, rule_redactors
from spanscore.run import SPAN_TARGETS, Turn
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.config import RunsConfig, SessionsConfig
from spanscore.runs.intake import StoredLogs, StoredSpans
from spanscore.runs.readiness import RunAssembler
from spanscore.runs.recovery import StoredSpanSource
from spanscore.runs.selection import run_selector
from spanscore.runs.sessions import SessionTracker
from spanscore.sampling.engine import RuleEngine
from spanscore.sampling.rule_sets import rule_set_version
from spanscore.sampling.rules import RuleConfig, SamplingConfig
from spanscore.scorers.base import Scorer
from spanscore.scorers.registry import build
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.dispatcher import ActiveRules, Dispatcher, SessionDispatch
from spanscore.scoring.outputs import InBackground, UntilDurable
from spanscore.scoring.ready_poller import ReadyPoller
from spanscore.scoring.recovery_waves import RecoveryWaves
from spanscore.scoring.subject import RuleRun, Subject
from spanscore.scoring.workers import ScoringWorkers
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.connection import is_embedded
from spanscore.storage.reads.recovery import session_turns, settled_sessions, spend_since, unscored_sessions
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig

if TYPE_CHECKING:  # the judge client loads litellm; config loading imports this module and must not
    from spanscore.scorers.judge.current import Judge

log = logging.getLogger(__name__)

SPOOLED_ROWS_WAIT_S = 10.0
"""How long a start waits for the spooled decision, score and turn rows to be stored before it recovers."""


def build_rule_scorers(rules: Sequence[RuleConfig], judge: Judge | None = None) -> dict[str, list[Scorer]]:
    """Build every configured scorer once, at start-up; LLM scorers with ``judge`` (its config and client).

    An unknown scorer or option, or a scorer paired with a target it cannot score, is refused naming its rule.
    """
    if judge is None:
        return _build_rule_scorers(rules)
    from spanscore.scorers.judge.current import using_judge  # loads litellm: only when there is a judge to use

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
        redact: RedactConfig | None = None,
    ) -> None:
        """Build the stage; ``writers`` are the durable score, decision and scored-run write paths.

        The service passes spooled ones (``storage.write.paths``); without them, plain in-memory
        writers are used (backfill, tests).
        """
        self.config = scoring or ScoringConfig()
        self.redaction = RedactionPolicies(redact)
        self._store = store
        self._exporter = exporter
        self.judge = judge
        self.assembler = RunAssembler(runs)
        self.assembly = AssemblyThread(self.assembler)
        """The assembler's own thread: every call on the assembler goes through it (``runs.assembly_thread``)."""
        self.sessions = SessionTracker(sessions)
        if writers is None:
            writers = _memory_writers(store, batch_max, flush_interval)
        self.score_writer, self.decision_writer, self.run_writer = writers
        # What the scorers received is stored as one row per scored run (see spanscore.storage.scored_runs).
        self._durable = (
            UntilDurable(self.score_writer),
            UntilDurable(self.decision_writer),
            UntilDurable(self.run_writer),
        )
        self._score_writes = InBackground(self._durable[0])
        scores: Consumer[Sequence[ScoreRow]] = (
            FanOut([self._score_writes, exporter]) if exporter is not None else self._score_writes
        )
        self.dispatcher = Dispatcher(
            self._active(rules),
            self.config,
            decisions=self._durable[1],
            scored_runs=self._durable[2],
            scores=scores,
            sessions=self.sessions,
        )
        self.poller = ReadyPoller(
            self.assembly,
            self.sessions,
            self.dispatcher,
            SessionDispatch(self.dispatcher, self._stored_turns, self._settled_sessions),
            interval_s=self.config.poll_interval_s,
            scores_sessions=lambda: self.dispatcher.rules.scores_sessions and self.dispatcher.may_poll_sessions(),
            max_waiting=2 * self.config.queue_size,
            chunk=max(1, self.config.queue_size // 2),
        )
        self.recovery_waves = RecoveryWaves(self.assembly, interval_s=max(self.config.poll_interval_s, 0.2))
        """Undecided traces read back as room frees up: a restart's past its first wave, a lost fleet replica's."""
        self.spans_in = StoredSpans(self.assembly)
        """What the span writer hands on after each insert."""
        self.logs_in = StoredLogs(self.assembly)
        self._shut_down = False

    def _active(self, rules: Sequence[RuleConfig], engine: RuleEngine | None = None) -> ActiveRules:
        """Build every scorer of ``rules`` (``ConfigError`` if one fails) and point the assembler at their targets."""
        scorers = build_rule_scorers(rules, self.judge)
        redactors = rule_redactors(rules, self.redaction)
        config = SamplingConfig(rules=list(rules))
        engine = engine.with_rules(config) if engine is not None else RuleEngine(config)
        targets = {rule.target for rule in rules}
        self.assembler.span_targets = frozenset(targets & set(SPAN_TARGETS))
        self.assembler.selects = run_selector(rules, self.assembler.config)
        return ActiveRules(
            engine, scorers, rule_set_version(rules), scores_sessions="session" in targets, redactors=redactors
        )

    def replace_rules(self, rules: Sequence[RuleConfig]) -> None:
        """Score with ``rules`` from the next dispatch on; ``ConfigError`` (and no change) if any scorer fails to build.

        The swap happens between two dispatches on the event loop: a run is decided and its jobs are made
        under one set, and jobs already queued finish with the scorers and the version they started with.
        Caps and budgets of unchanged rules carry on (``RuleEngine.with_rules``). A removed rule's
        ``scores_written`` series go: kept, every name a token holder ever PUT would stay in /metrics.
        """
        self.dispatcher.rules = self._active(rules, self.dispatcher.rules.engine)
        names = {rule.name for rule in rules}
        for rule, status in [key for key in self.scores_written if key[0] not in names]:
            del self.scores_written[rule, status]
        redactions = self.dispatcher.workers.redactions
        for rule, detector in [key for key in redactions if key[0] not in names]:
            del redactions[rule, detector]

    # -- what the dispatcher holds, by name ----------------------------------------------------------

    @property
    def store(self) -> ClickHouseStore:
        return self._store

    @property
    def engine(self) -> RuleEngine:
        return self.dispatcher.rules.engine

    @property
    def scorers(self) -> dict[str, list[Scorer]]:
        return self.dispatcher.rules.scorers

    @property
    def workers(self) -> ScoringWorkers[RuleRun]:
        return self.dispatcher.workers

    @property
    def scores_written(self) -> Counter[tuple[str, str]]:
        return self.dispatcher.scores_written

    @property
    def decisions_written(self) -> Counter[str]:
        return self.dispatcher.decisions_written

    @property
    def internal_runs_skipped(self) -> int:
        return self.dispatcher.internal_runs_skipped

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._shut_down = False
        self.assembly.open()
        for writer in (self.score_writer, self.decision_writer, self.run_writer):
            await writer.start()
        await self.workers.start()
        # A fleet member takes up traces, sessions and spend once it joined (``scoring.fleet_member``): the store is
        # the whole fleet's, and the runs other live replicas are still assembling are theirs to decide.
        if self.config.recover_on_start and not self.dispatcher.sessions_shared:
            await self._spooled_rows_stored()
            source = StoredSpanSource(self._store)
            now = time.time_ns()
            # From the latest span stored: a restart after a longer downtime than the look-back found nothing.
            since = self.assembler.recovery_since(await asyncio.to_thread(source.latest_span_ns, now))
            undecided = await self._undecided(source, since)  # listed before any of them is decided again
            recovered = await self.assembly.call(self.assembler.recover, source, since, now)
            if recovered:
                log.info("recovered pending traces from storage count=%d", recovered)
            queued = await self.recovery_waves.add(source, undecided)
            if queued:
                log.info("recovery: %d undecided traces wait for room in run assembly", queued)
            await asyncio.to_thread(self._restore_budgets)
            if self.dispatcher.rules.scores_sessions:
                await asyncio.to_thread(self._restore_sessions)
        self.poller.start()

    async def _spooled_rows_stored(self) -> None:
        """Wait (up to ``SPOOLED_ROWS_WAIT_S``) until the decisions and scores an earlier process spooled are stored.

        Recovery reads which runs were decided from storage, and one whose decision still waited in the spool was
        decided again (after a kill -9 under load, 271 runs had their decision row twice, #43).
        """
        writers = (self.decision_writer, self.score_writer, self.run_writer)
        deadline = time.monotonic() + SPOOLED_ROWS_WAIT_S
        while any(writer.spool is not None and writer.spool.batches for writer in writers):
            if time.monotonic() >= deadline:
                log.warning(
                    "recovery: decisions or scores an earlier process spooled are not stored yet; a run among "
                    "them may be decided again (the same rows, replaced when merged)"
                )
                return
            await asyncio.sleep(0.05)

    async def _undecided(self, source: StoredSpanSource, since_ns: int) -> list[str]:
        """The undecided traces storage lists; none if it cannot (the latest traces are still recovered)."""
        try:
            return await asyncio.to_thread(source.undecided_trace_ids, since_ns)
        except Exception:
            log.warning(
                "recovery: could not list the undecided traces; only the latest ones are recovered", exc_info=True
            )
            return []

    def _restore_budgets(self) -> None:
        """Budgets go on from today's recorded spend instead of from zero after a restart.

        Only with the embedded store, which one process owns. A fleet sizes each replica's share from the
        whole fleet's spend instead (``scoring.fleet_member``); separate processes on one ClickHouse server
        cannot tell whose spend a row is, so each starts at zero (docs/sampling.md).
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
        """Stop polling, finish queued jobs, flush scores and decisions; idempotent.

        A fleet replica's handover calls it before the service does: the second call returns at once.
        """
        if self._shut_down:
            return
        self._shut_down = True
        # One drain budget for the ready line and the scoring queue: the service's shutdown_timeout_s is longer.
        deadline = time.monotonic() + self.config.drain_timeout_s
        # Each step on its own: one that fails must not skip the flushes after it (a second call returns at once).
        await _step("recovery waves", self.recovery_waves.stop)
        # The line gets half: what it hands on still needs the workers, and a job they run is a score; a run left
        # in line is only undecided, and the next start's recovery (or a fleet successor) decides it.
        await _step("ready poller", lambda: self.poller.stop(within_s=self.config.drain_timeout_s / 2))
        await _step("run assembly", self.assembly.close)
        await _step("scoring workers", lambda: self.workers.shutdown(within_s=max(0.0, deadline - time.monotonic())))
        await _step("score writes", self._score_writes.settle)
        for writer in (self.score_writer, self.decision_writer, self.run_writer):
            await _step(f"{writer.name} writer", writer.shutdown)
        if self._exporter is not None:
            await _step("score exporter", lambda: asyncio.to_thread(self._exporter.shutdown))  # type: ignore[union-attr]

    def left_undecided(self) -> list[str]:
        """Traces the last shutdown left unfinished, for a fleet's handover note to list for the successors.

        Ready runs it had no time to decide, and runs whose scoring jobs it cut (sampled, unscored); a process
        alone finds them again at its next start (``runs.recovery``).
        """
        return list(dict.fromkeys([*self.poller.left, *self.workers.cut]))

    async def dispatch_subjects(self, subjects: Sequence[Subject]) -> None:
        """Decide and score subjects built elsewhere (backfill: stored runs, span views or sessions)."""
        await self.dispatcher.dispatch([(subject, False) for subject in subjects])

    def _stored_turns(self, held: dict[str, set[str]]) -> dict[str, list[Turn]]:
        """The stored turns memory lacks of these sessions (``held``: the turns memory has, by session id)."""
        try:
            return session_turns(self._store, held, limit=self.sessions.config.max_turns, held=held)
        except Exception:  # storage down: score the turns held rather than hold the sessions back
            log.warning("could not read earlier turns of %d sessions", len(held), exc_info=True)
            return {}

    def _settled_sessions(self, session_ids: list[str]) -> set[str]:
        try:
            return settled_sessions(self._store, session_ids)
        except Exception:  # storage down: a first scoring must not be lost; a continuation may be scored again
            log.warning("could not read which sessions were scored before; scoring them", exc_info=True)
            return set()

    async def settle(self) -> None:
        """Wait for every queued job and every score row already handed to storage."""
        await self.workers.drain()
        await self._score_writes.settle()

    def metrics(self) -> dict[str, float]:
        stats, sessions = self.assembler.stats, self.sessions.stats
        out: dict[str, float] = {
            "scoring_queue_depth": self.workers.depth,
            "scoring_ready_waiting_runs": self.poller.waiting,
            "scoring_ready_waiting_bytes": self.poller.waiting_bytes,
            "scoring_write_retries": sum(durable.retries for durable in self._durable),
            "runs_pending_traces": stats.pending_traces,
            "runs_assembly_queued_records": self.assembly.queued_records,
            "runs_assembly_queued_bytes": self.assembly.queued_bytes,
            "runs_evicted_traces": stats.evicted_traces,
            "runs_evicted_early": stats.evicted_runs_early,
            "runs_evicted_waiting": self.assembler.evicted_waiting,
            "runs_evicted_waiting_bytes": self.assembler.evicted_bytes,
            "scoring_runs_shed": stats.runs_shed,
            "runs_pending_bytes": stats.pending_bytes,
            "runs_too_large": stats.too_large_traces,
            "runs_too_large_records_dropped": stats.too_large_records,
            "runs_ready": stats.runs_ready,
            "runs_recovery_waiting_traces": self.recovery_waves.waiting,
            "runs_recovery_skipped_traces": self.recovery_waves.skipped,
            "runs_recovered_traces": stats.recovered_traces,
            "spans_conflicting_ids_ignored": stats.conflicting_spans_ignored,
            "sessions_open": sessions.open_sessions,
            "sessions_kept": sessions.kept_sessions,
            "sessions_turns_held": sessions.held_turns,
            "sessions_bytes_held": sessions.held_bytes,
            "sessions_ready": sessions.sessions_ready,
            "sessions_rescored": sessions.sessions_rescored,
            "sessions_evicted": sessions.sessions_evicted,
            "sessions_continued_ignored": sessions.continued_ignored,
            "sessions_turns_dropped": sessions.turns_dropped,
        }
        code = self.workers.code
        out["scoring_code_timed_out"] = code.timed_out
        out["scoring_code_workers_lost"] = code.workers_lost
        out["scoring_code_workers_started"] = code.workers_started
        for state, count in self.workers.states.items():
            out[f"scoring_jobs_{state}"] = count
        for (rule, status), count in self.scores_written.items():
            out[metric_key("scores_written", rule=rule, status=status)] = count
        for (rule, detector), count in self.workers.redactions.items():
            out[metric_key("judge_redactions", rule=rule, detector=detector)] = count
        for rule, count in self.dispatcher.scores_cost_unknown.items():
            out[metric_key("scores_cost_unknown", rule=rule)] = count
        for decision, count in self.decisions_written.items():
            out[metric_key("decisions_written", decision=decision)] = count
        return out


def _memory_writers(
    store: ClickHouseStore, batch_max: int, flush_interval: float
) -> tuple[BatchWriter[ScoreRow], BatchWriter[DecisionRow], BatchWriter[ScoredRunRow]]:
    """Writers without a spool (backfill, tests): a storage failure is retried by ``UntilDurable``."""
    config = WriterConfig(batch_max=batch_max, flush_interval=flush_interval, max_pending=100_000)
    return (
        BatchWriter("scores", Inserts(Calling(store.insert_scores)), config),
        BatchWriter("decisions", Inserts(Calling(store.insert_decisions)), config),
        BatchWriter("scored_runs", Inserts(Calling(store.insert_scored_runs)), config),
    )


async def _step(name: str, stop: Callable[[], Awaitable[object]]) -> None:
    """One step of a shutdown: a failure is logged, and the next steps still run."""
    try:
        await stop()
    except Exception:
        log.exception("shutdown: stopping the %s failed; going on with the rest", name)
