"""Wires the pipeline together, starts it and stops it (``running.py`` runs it until a signal arrives).

Start order is sinks first, receivers last (storage, writers, API, then the
OTLP receivers); shutdown is the reverse, draining as it goes: receivers stop
accepting and let in-flight exports finish, then the writers flush every
buffered span, then the store closes. A SIGTERM therefore loses nothing that
was acknowledged.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spanscore.alerting.config import PagerDutyTarget
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.keeper_state import KeeperAlertState
from spanscore.alerting.notify import Notifier
from spanscore.collector.evaluation_events import evaluations_in_logs, evaluations_in_spans
from spanscore.collector.evaluation_tap import EvaluationTap
from spanscore.collector.ingest import Ingest
from spanscore.collector.redaction import IngestRedaction
from spanscore.config import ServiceConfig
from spanscore.errors import ConfigError
from spanscore.export.forward import ScoreExporter, SpanPassThrough
from spanscore.pipeline import Relay
from spanscore.records import LogRecord, SpanRecord
from spanscore.redaction.config import RedactionPolicies
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.preflight import check_scorers, rule_scorer_uses
from spanscore.scoring.feedback_resolver import FeedbackResolver
from spanscore.scoring.held_errors import HeldErrors
from spanscore.scoring.live import LiveScoring
from spanscore.server.api import ApiServer
from spanscore.server.auth import TokenCheck
from spanscore.server.fleet_parts import FleetParts
from spanscore.server.operations import ServiceOperations
from spanscore.server.otlp_grpc import GrpcReceiver
from spanscore.server.otlp_http import HttpReceiver
from spanscore.server.rule_control import RuleControl
from spanscore.server.service_metrics import service_metrics
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.fleet_records import StoredDeliveries
from spanscore.storage.reads.alerts import window_scores
from spanscore.storage.scores import ScoreRow
from spanscore.storage.write import paths as write_paths
from spanscore.storage.write.deadletter_ops import DeadLetterOps
from spanscore.storage.write.writer import BatchWriter

if TYPE_CHECKING:
    from spanscore.scorers.judge.current import Judge

log = logging.getLogger(__name__)


class Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.store = ClickHouseStore.from_config(config.storage)
        # Stored spans and logs go on to live scoring's run assembler, once live scoring exists (first rules).
        self.stored_spans: Relay[Sequence[SpanRecord]] = Relay()
        self.stored_logs: Relay[Sequence[LogRecord]] = Relay()
        self.span_writer = write_paths.span_writer(self.store, config.storage, self.stored_spans)
        self.log_writer = write_paths.log_writer(self.store, config.storage, self.stored_logs)
        self.judge: Judge | None = None
        """The judge every scorer of this service is built with (made with the first rules), passed down."""
        self.live = self._live_scoring(config)
        self.rule_control = RuleControl(config, self._install_rules)
        self.fleet = FleetParts(config.fleet, self.rule_control, self.store) if config.fleet is not None else None
        self._started = False
        self.passthrough = (
            SpanPassThrough(config.forward) if config.forward is not None and config.forward.spans else None
        )
        # Outside evaluation results ride in with the spans and logs: stored before the export is acknowledged.
        self.feedback_writer: BatchWriter[ScoreRow] = write_paths.feedback_writer(self.store, config.storage)
        self.feedback_resolver = FeedbackResolver(self.store, self.feedback_writer)
        self.held_errors = HeldErrors(self.store)
        self.span_tap = EvaluationTap(self.span_writer, evaluations_in_spans, self.feedback_writer)
        self.log_tap = EvaluationTap(self.log_writer, evaluations_in_logs, self.feedback_writer)
        self.metric_writer = write_paths.metric_writer(self.store, config.storage)
        self.ingest = Ingest(
            self.span_tap,
            self.log_tap,
            self.passthrough,
            config.collector.limits,
            ingest_redaction(config),
            metrics=self.metric_writer,
        )
        tokens = TokenCheck(config.collector.auth_tokens)
        self.grpc = GrpcReceiver(config.collector.grpc, self.ingest, tokens) if config.collector.grpc.enabled else None
        self.http = HttpReceiver(config.collector.http, self.ingest, tokens) if config.collector.http.enabled else None
        self.dead_letters = DeadLetterOps(self.writers)
        self.alerting = _alerting(config, self.store, self.fleet)
        self.operations = ServiceOperations(config, self.store, self.feedback_writer, self.alerting, lambda: self.judge)
        self.operations.after_backfill = self.held_errors.refresh  # a backfill that repaired errors clears them
        self.api = (
            ApiServer(
                config.api,
                self.store,
                self.metrics,
                self.operations,
                self.rule_control,
                dead_letters=self.dead_letters,
                judge=config.judge,
                degraded=self.fleet.degraded if self.fleet is not None else None,
                readiness=self.fleet.readiness if self.fleet is not None else None,
            )
            if config.api.enabled
            else None
        )
        self._stopped = asyncio.Event()

    def _live_scoring(self, config: ServiceConfig) -> LiveScoring | None:
        if not config.rules:
            return None
        check_scorers(rule_scorer_uses(config.rules), config.judge, os.environ)
        exporter = None
        if config.forward is not None and (config.forward.scores != "none" or config.forward.judge_spans):
            exporter = ScoreExporter(config.forward)
        if self.judge is None:
            from spanscore.scorers.judge.current import Judge  # litellm: only with rules to score

            tracer = exporter.judge_tracer() if exporter is not None else None
            self.judge = Judge(config.judge_config(), tracer=tracer)
        live = LiveScoring(
            self.store,
            config.rules,
            runs=config.collector.runs,
            sessions=config.collector.sessions,
            scoring=config.scoring,
            flush_interval=config.storage.flush_interval_s,
            exporter=exporter,
            judge=self.judge,
            redact=config.redact,
            writers=(
                write_paths.score_writer(self.store, config.storage),
                write_paths.decision_writer(self.store, config.storage),
                write_paths.scored_run_writer(self.store, config.storage),
            ),
        )
        self.stored_spans.connect(live.spans_in)
        self.stored_logs.connect(live.logs_in)
        return live

    async def _install_rules(self, rules: list[RuleConfig]) -> None:
        """New rules take effect: swapped into live scoring, or live scoring starts with the first rules."""
        if self.live is not None:
            self.live.replace_rules(rules)
        elif rules:
            live = self._live_scoring(self.config.model_copy(update={"rules": rules}))
            if live is not None and self.fleet is not None:
                await self.fleet.attach(live)
            if self._started and live is not None:
                await live.start()
            self.live = live

    def metrics(self) -> dict[str, float]:
        return service_metrics(self)

    def writers(self) -> list[BatchWriter[Any]]:
        """Every durable write path: spans, logs, metrics, and (with rules) scores, decisions and scored runs."""
        found: list[BatchWriter[Any]] = [self.span_writer, self.log_writer, self.feedback_writer, self.metric_writer]
        if self.live is not None:
            found += [self.live.score_writer, self.live.decision_writer, self.live.run_writer]
        return found

    async def start(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.store.open)
        if self.fleet is not None:
            if self.live is not None:
                await self.fleet.attach(self.live)
            await self.fleet.start()
        if self.live is not None:
            await self.live.start()
        await self.feedback_writer.start()
        await self.feedback_resolver.start()
        await self.held_errors.start()
        await self.span_writer.start()
        await self.log_writer.start()
        await self.metric_writer.start()
        if self.passthrough is not None:
            await self.passthrough.start()
        await self.alerting.start()
        for component in self._listeners():
            await component.start()
        self._started = True

    def _listeners(self) -> Sequence[ApiServer | HttpReceiver | GrpcReceiver]:
        return [c for c in (self.api, self.http, self.grpc) if c is not None]

    async def shutdown(self) -> None:
        """Reverse of start, draining; idempotent and safe without start()."""
        for component in reversed(self._listeners()):
            try:
                await component.shutdown()
            except Exception:
                log.exception("listener shutdown failed")
        await self.span_writer.shutdown()
        await self.log_writer.shutdown()
        await self.metric_writer.shutdown()
        await self.feedback_resolver.shutdown()
        await self.held_errors.shutdown()
        await self.feedback_writer.shutdown()
        if self.passthrough is not None:
            await self.passthrough.shutdown()
        if self.fleet is not None:
            await self.fleet.shutdown()
        if self.live is not None:
            await self.live.shutdown()
        if self.judge is not None:
            await _close_judge_workers(self.judge)
        await self.alerting.shutdown()
        if self.fleet is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.fleet.leave)
            except Exception:
                log.exception("leaving the fleet failed")  # the store and workers still close below
        await asyncio.get_running_loop().run_in_executor(None, self.ingest.workers.close)
        await asyncio.get_running_loop().run_in_executor(None, self.store.close)
        self._stopped.set()

    def addresses(self) -> dict[str, str]:
        found = {}
        if self.grpc is not None:
            found["grpc"] = f"{self.config.collector.grpc.host}:{self.grpc.port}"
        if self.http is not None:
            found["http"] = f"http://{self.config.collector.http.host}:{self.http.port}"
        if self.api is not None:
            found["api"] = f"http://{self.config.api.host}:{self.api.port}"
        return found


async def _close_judge_workers(judge: Judge) -> None:
    """Stop the judge's worker processes with the service, not at the next judge call or process exit."""
    try:
        await judge.aclose()
    except Exception:
        log.exception("judge worker shutdown failed")


def ingest_redaction(config: ServiceConfig) -> IngestRedaction | None:
    """``collector.redact``'s set as an ingest policy, or None when values are stored as sent."""
    if config.collector.redact is None:
        return None
    return IngestRedaction(RedactionPolicies(config.redact).only(config.collector.redact))


def _alerting(config: ServiceConfig, store: ClickHouseStore, fleet: FleetParts | None) -> AlertEvaluator:
    """The alert evaluator; a PagerDuty receiver whose routing-key variable is unset fails start-up here.

    In a fleet only the leader evaluates, and the states live in Keeper, claimed with compare-and-set.
    """
    missing = [
        f"alerts[{index}].notify: environment variable {target.pagerduty.routing_key_env} is not set"
        for index, alert in enumerate(config.alerts)
        for target in alert.notify
        if isinstance(target, PagerDutyTarget) and not os.environ.get(target.pagerduty.routing_key_env)
    ]
    if missing:
        raise ConfigError("config: " + "; ".join(missing))
    read = functools.partial(window_scores, store)
    if fleet is not None:
        coordinator = fleet.fleet
        state = KeeperAlertState(coordinator.client, coordinator.node("alerts"))
        return AlertEvaluator(
            config.alerts, config.alerting, read, Notifier(config.alerting), state=state, leader=coordinator.is_leader,
            ready=lambda: coordinator.connected, deliveries=StoredDeliveries(store, coordinator.replica),
        )  # fmt: skip
    spool = config.storage.spool_dir
    return AlertEvaluator(
        config.alerts,
        config.alerting,
        read,
        Notifier(config.alerting),
        state_file=Path(spool) / "alerts-state.json" if spool else None,
    )
