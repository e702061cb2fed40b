"""Wires the pipeline together and runs it until a signal arrives.

Start order is sinks first, receivers last (storage, writers, API, then the
OTLP receivers); shutdown is the reverse, draining as it goes: receivers stop
accepting and let in-flight exports finish, then the writers flush every
buffered span, then the store closes. A SIGTERM therefore loses nothing that
was acknowledged.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spanscore.alerting.config import PagerDutyTarget
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.notify import Notifier
from spanscore.collector.evaluation_events import evaluations_in_logs, evaluations_in_spans
from spanscore.collector.ingest import Ingest
from spanscore.config import ServiceConfig, load_config
from spanscore.errors import ConfigError
from spanscore.export.forward import ScoreExporter, SpanPassThrough
from spanscore.metric_keys import metric_key
from spanscore.pipeline import Relay
from spanscore.records import LogRecord, SpanRecord
from spanscore.sampling.rule_sets import RuleSet, canonical_rules, diff_rules
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.preflight import check_scorers, rule_scorer_uses
from spanscore.scoring.backfill import BackfillProgress, backfill, find_rule, parse_since, preview
from spanscore.scoring.feedback import (
    PENDING_SPAN,
    EvaluationTap,
    ScoredSpan,
    parse_scores,
    row_for_posted,
    row_for_unresolved,
)
from spanscore.scoring.feedback_resolver import FeedbackResolver
from spanscore.scoring.live import LiveScoring
from spanscore.server.api import ApiServer
from spanscore.server.auth import TokenCheck
from spanscore.server.banner import serve_banner
from spanscore.server.otlp_grpc import GrpcReceiver
from spanscore.server.otlp_http import HttpReceiver
from spanscore.storage import write_paths
from spanscore.storage.alert_reads import window_scores
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.deadletter_ops import DeadLetterOps
from spanscore.storage.guard import QueryLimits
from spanscore.storage.outside_scores import scored_spans
from spanscore.storage.scores import ScoreRow
from spanscore.storage.writer import BatchWriter

if TYPE_CHECKING:
    from spanscore.scorers.judge.client import Judge

log = logging.getLogger(__name__)


def store_for(config: ServiceConfig) -> ClickHouseStore:
    """The configured store, not yet opened (the CLI uses it alone when no service is running)."""
    storage = config.storage
    return ClickHouseStore(
        storage.dsn,
        storage.database,
        spans_ttl_days=storage.spans_ttl_days,
        scores_ttl_days=storage.scores_ttl_days,
        cluster=storage.cluster,
        query_dsn=storage.query_dsn,
        query_readers=storage.query_readers,
        query_allow_writable=storage.query_allow_writable,
        migrate_schema=storage.migrate,
        min_free_disk_bytes=storage.min_free_disk_bytes,
        limits=QueryLimits(
            max_query_bytes=storage.query_max_bytes,
            max_execution_time_s=storage.query_max_execution_time_s,
            max_memory_bytes=storage.query_max_memory_bytes,
            max_result_rows=storage.query_max_result_rows,
            max_result_bytes=storage.query_max_result_bytes,
        ),
    )


class Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.store = store_for(config)
        # Stored spans and logs go on to live scoring's run assembler, once live scoring exists (first rules).
        self.stored_spans: Relay[Sequence[SpanRecord]] = Relay()
        self.stored_logs: Relay[Sequence[LogRecord]] = Relay()
        self.span_writer = write_paths.span_writer(self.store, config.storage, self.stored_spans)
        self.log_writer = write_paths.log_writer(self.store, config.storage, self.stored_logs)
        self.judge: Judge | None = None
        """The judge every scorer of this service is built with (made with the first rules), passed down."""
        self.live = self._live_scoring(config)
        self.rule_set = RuleSet.of(config.rules, source="config")
        self.operator_scorer_paths = _import_paths(config.rules)
        self.rule_reloads_failed = 0
        self._rules_lock = asyncio.Lock()
        self._started = False
        self.backfill_progress: BackfillProgress | None = None
        self.passthrough = (
            SpanPassThrough(config.forward) if config.forward is not None and config.forward.spans else None
        )
        # Outside evaluation results ride in with the spans and logs: stored before the export is acknowledged.
        self.feedback_writer: BatchWriter[ScoreRow] = write_paths.feedback_writer(self.store, config.storage)
        self.feedback_resolver = FeedbackResolver(self.store, self.feedback_writer)
        self.span_tap = EvaluationTap(self.span_writer, evaluations_in_spans, self.feedback_writer)
        self.log_tap = EvaluationTap(self.log_writer, evaluations_in_logs, self.feedback_writer)
        self.ingest = Ingest(self.span_tap, self.log_tap, self.passthrough, config.collector.limits)
        tokens = TokenCheck(config.collector.auth_tokens)
        self.grpc = GrpcReceiver(config.collector.grpc, self.ingest, tokens) if config.collector.grpc.enabled else None
        self.http = HttpReceiver(config.collector.http, self.ingest, tokens) if config.collector.http.enabled else None
        self.dead_letters = DeadLetterOps(self.writers)
        self.api = (
            ApiServer(
                config.api,
                self.store,
                self.metrics,
                self,
                dead_letters=self.dead_letters,
                rules=self.rules_summary,
                rule_holder=self,
                judge=config.judge,
                score_taker=self,
                alerts=self.alerting_state,
            )
            if config.api.enabled
            else None
        )
        self.alerting = _alerting(config, self.store)
        self._stopped = asyncio.Event()

    def _live_scoring(self, config: ServiceConfig) -> LiveScoring | None:
        if not config.rules:
            return None
        check_scorers(rule_scorer_uses(config.rules), config.judge, os.environ)
        exporter = None
        if config.forward is not None and (config.forward.scores != "none" or config.forward.judge_spans):
            exporter = ScoreExporter(config.forward)
        if self.judge is None:
            from spanscore.scorers.judge.client import Judge, JudgeConfig  # litellm: only with rules to score

            tracer = exporter.judge_tracer() if exporter is not None else None
            self.judge = Judge(JudgeConfig.model_validate(config.judge) if config.judge else None, tracer=tracer)
        live = LiveScoring(
            self.store,
            config.rules,
            runs=config.collector.runs,
            sessions=config.collector.sessions,
            scoring=config.scoring,
            flush_interval=config.storage.flush_interval_s,
            exporter=exporter,
            judge=self.judge,
            writers=(
                write_paths.score_writer(self.store, config.storage),
                write_paths.decision_writer(self.store, config.storage),
                write_paths.scored_run_writer(self.store, config.storage),
            ),
        )
        self.stored_spans.connect(live.spans_in)
        self.stored_logs.connect(live.logs_in)
        return live

    async def apply_rules(self, rules: Sequence[RuleConfig], *, source: str) -> RuleSet:
        """Score with ``rules`` from now on, or raise ``ConfigError`` listing every problem and change nothing.

        The new set is checked as at start-up (unknown scorers, LLM scorers without a usable judge) and every
        scorer is built before anything is swapped. A service started without rules starts live scoring here
        (recovering recent traces from storage, as at start).
        """
        async with self._rules_lock:
            rules = list(rules)
            check_scorers(rule_scorer_uses(rules), self.config.judge, os.environ, source=source)
            old = canonical_rules(self.rule_set.rules)
            if self.live is not None:
                self.live.replace_rules(rules)
            elif rules:
                live = self._live_scoring(self.config.model_copy(update={"rules": rules}))
                if self._started and live is not None:
                    await live.start()
                self.live = live
            self.config.rules = rules
            self.rule_set = RuleSet.of(rules, generation=self.rule_set.generation + 1, source=source)
            change = diff_rules(old, canonical_rules(rules))
            log.info(
                "rules applied version=%s generation=%d source=%s change=%s",
                self.rule_set.version,
                self.rule_set.generation,
                source,
                "; ".join(change.lines()) or "none",
            )
            return self.rule_set

    async def reload_rules_from(self, path: str) -> RuleSet | None:
        """SIGHUP: re-read the config file and apply its rules; on any problem keep the running rules and log why.

        Only the rules change while running; other sections that differ from the running config are named in
        a warning (they need a restart).
        """
        from spanscore.server.default_rules import apply_default_rules

        ignored: list[str] = []
        try:
            config = await asyncio.to_thread(load_config, path)
            ignored = _changed_sections(self.config, config)
            apply_default_rules(config)
            applied = await self.apply_rules(config.rules, source=f"{path} (SIGHUP)")
            self.operator_scorer_paths = _import_paths(config.rules)
        except ConfigError as exc:
            self.rule_reloads_failed += 1
            problems = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            if ignored:
                # The rules were checked against the running judge and sections, not the file's: say so, or a
                # new judge: section reads as "no judge model is configured" while the file plainly has one.
                problems += f" (changed on disk and applied only by a restart: {', '.join(ignored)})"
            log.error("rules not reloaded, the running rules (version %s) stay: %s", self.rule_set.version, problems)
            return None
        if ignored:
            log.warning("config sections changed on disk need a restart to take effect: %s", ", ".join(ignored))
        return applied

    def alerting_state(self) -> list[dict[str, Any]]:
        """GET /api/v1/alerts: every alert with its latest value, interval and status."""
        return self.alerting.describe()

    async def add_scores(self, document: Any) -> dict[str, Any]:
        """POST /api/v1/scores: validate every item, attach each to its span, store them all or none.

        A score whose span storage does not hold yet is stored too, unresolved, and attached once the span
        arrives (``FeedbackResolver``): an application may post the moment it has a trace id.
        """
        scores = parse_scores(document)
        wanted = [(score.trace_id, score.span_id) for score in scores]
        facts = await asyncio.to_thread(scored_spans, self.store, wanted)
        now = time.time_ns()
        rows = [
            row_for_posted(score, ScoredSpan(*facts[key])) if (key := (score.trace_id, score.span_id)) in facts
            else row_for_unresolved(score, now)
            for score in scores
        ]  # fmt: skip
        await self.feedback_writer.consume(rows)
        unresolved = [row.score_id for row in rows if PENDING_SPAN in row.attributes]
        return {"stored": len(rows), "score_ids": [row.score_id for row in rows], "unresolved": unresolved}

    async def preview(self, rule_name: str, since: str) -> dict[str, Any]:
        rule = find_rule(self.config.rules, rule_name)
        runs = self.config.collector.runs
        result = await asyncio.to_thread(preview, self.store, rule, parse_since(since), runs, self.judge)
        return result.as_dict()

    async def backfill(self, rule_name: str, since: str) -> dict[str, Any]:
        rule = find_rule(self.config.rules, rule_name)
        self.backfill_progress = progress = BackfillProgress(rule.name)
        runs, scoring = self.config.collector.runs, self.config.scoring
        return await backfill(self.store, rule, parse_since(since), runs, scoring, progress, self.judge)

    async def cancel_backfill(self) -> dict[str, Any]:
        """Ask the running backfill to stop after its current chunk; scored runs stay written."""
        progress = self.backfill_progress
        if progress is None or progress.finished:
            return {"cancelled": False, "reason": "no backfill is running"}
        progress.cancel()
        return {"cancelled": True, "progress": progress.as_dict()}

    def _backfill_metrics(self) -> dict[str, float]:
        progress = self.backfill_progress
        if progress is None:
            return {}
        figures = progress.as_dict()
        keys = ("done", "total", "rate_runs_per_s", "eta_s", "finished", "cancelled")
        return {f"backfill_{key}": float(figures[key]) for key in keys}

    def rules_summary(self) -> list[dict[str, Any]]:
        """The rules this service scores with, as the dashboard and status show them."""
        return [
            {
                "name": rule.name,
                "target": rule.target,
                "scorers": [spec.name for spec in rule.scorers],
                "sample": rule.sample,
            }
            for rule in self.config.rules
        ]

    def metrics(self) -> dict[str, float]:
        spans = self.span_writer.stats
        live = self.live.metrics() if self.live is not None else {}
        return (
            live
            | self.alerting.metrics()
            | self._backfill_metrics()
            | {
                "spans_received": self.ingest.received_spans,
                "spans_rejected": self.ingest.rejected_spans,
                "spans_stored": spans.stored,
                "spans_refused_backpressure": spans.refused,
                "spans_spooled": spans.spooled,
                "spans_replayed": spans.replayed,
                "spans_pending": self.span_writer.pending,
                "storage_inserts": spans.inserts,
                "storage_insert_failures": spans.failed_inserts,
                "logs_stored": self.log_writer.stats.stored,
                "outside_scores_stored": self.feedback_writer.stats.stored,
                "outside_scores_resolved_late": self.feedback_resolver.resolved,
                "otlp_evaluations_received": self.span_tap.stored + self.log_tap.stored,
                "attribute_values_truncated": self.ingest.limit_counters.truncated_values,
                "attributes_dropped": self.ingest.limit_counters.dropped_attributes,
                "span_events_dropped": self.ingest.limit_counters.dropped_events,
                "span_links_dropped": self.ingest.limit_counters.dropped_links,
                "requests_refused_too_many_spans": self.ingest.limit_counters.refused_requests,
                "requests_refused_too_many_log_records": self.ingest.limit_counters.refused_log_requests,
                **self._write_path_metrics(),
                "rules_loaded": len(self.config.rules),
                "rules_generation": self.rule_set.generation,
                "rules_reloads_failed": self.rule_reloads_failed,
                metric_key("rules_version", version=self.rule_set.version): 1,
            }
            | {metric_key("rule_scorers", rule=rule.name): len(rule.scorers) for rule in self.config.rules}
        )

    def writers(self) -> list[BatchWriter[Any]]:
        """Every durable write path: spans, logs, and (with rules) scores, decisions and scored runs."""
        found: list[BatchWriter[Any]] = [self.span_writer, self.log_writer, self.feedback_writer]
        if self.live is not None:
            found += [self.live.score_writer, self.live.decision_writer, self.live.run_writer]
        return found

    def _write_path_metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for writer in self.writers():
            dead = writer.salvager.dead_letters
            out[f"{writer.name}_dead_lettered"] = writer.salvager.dead_lettered
            out[f"{writer.name}_dead_letters_waiting"] = dead.records if dead is not None else 0
            out[f"{writer.name}_salvaged_batches"] = writer.salvager.salvaged_batches
            out[f"{writer.name}_spooled"] = writer.stats.spooled
        out["write_path_degraded"] = 1 if self.dead_letters.health() else 0
        return out

    async def start(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.store.open)
        if self.live is not None:
            await self.live.start()
        await self.feedback_writer.start()
        await self.feedback_resolver.start()
        await self.span_writer.start()
        await self.log_writer.start()
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
        await self.feedback_resolver.shutdown()
        await self.feedback_writer.shutdown()
        if self.passthrough is not None:
            await self.passthrough.shutdown()
        if self.live is not None:
            await self.live.shutdown()
        if self.judge is not None:
            await _close_judge_workers(self.judge)
        await self.alerting.shutdown()
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


SWITCH_INTERVAL_S = 0.001
"""How long a thread may hold the GIL while another waits for it (CPython's default is 5 ms).

While the decode thread works through a large export, every step of a small request on the event
loop (a socket read, a hand-off between threads, the answer) waits for the GIL up to this long;
a small export takes about ten such steps, so 5 ms made it 50 ms or more. At 1 ms the decode of a
20,000-span export gets a few percent slower and small requests during it stay fast
(bench/decode_stall.py, docs/ack-modes.md)."""


def tune_for_serving() -> None:
    """Once started: freeze start-up objects out of the collector, and shorten the GIL switch interval."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    freeze_startup_objects()


def freeze_startup_objects() -> None:
    """Take what start-up left alive out of the cyclic garbage collector's reach.

    Imported modules, the config and the schema (about 83,000 tracked objects after a start without
    LLM judges, many more once litellm is loaded) live as long as the process, yet every full
    collection walked them all: pauses of the event loop of up to 107 ms under load, which showed as
    ack p99. Frozen, a full collection only walks what serving allocated (41 ms at most, same load).
    """
    gc.collect()
    gc.freeze()


async def run_until_signal(config: ServiceConfig, *, default_rule: bool = False, config_path: str | None = None) -> int:
    """Serve until SIGTERM or SIGINT, then drain and return the exit code; SIGHUP re-reads the rules."""
    service = Service(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    reloads: set[asyncio.Task[Any]] = set()

    def reload() -> None:
        if config_path is None:
            log.warning("SIGHUP ignored: the service was started without a config file (-c) to re-read")
            return
        task = loop.create_task(service.reload_rules_from(config_path))
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    loop.add_signal_handler(signal.SIGHUP, reload)
    try:
        await service.start()
    except Exception:
        await service.shutdown()
        raise
    tune_for_serving()
    addresses = " ".join(f"{k}={v}" for k, v in service.addresses().items())
    log.info("spanscore serving %s storage=%s", addresses, config.storage.database)
    ports = {name: c.port for name, c in (("grpc", service.grpc), ("http", service.http), ("api", service.api)) if c}
    print(serve_banner(config, service.addresses(), ports, default_rule), flush=True)
    await stop.wait()
    log.info("signal received: draining")
    try:
        await asyncio.wait_for(service.shutdown(), config.shutdown_timeout_s)
    except TimeoutError:
        log.error("shutdown did not finish within %.0fs", config.shutdown_timeout_s)
        return 1
    log.info("stopped cleanly spans_stored=%d", service.span_writer.stats.stored)
    return 0


def _changed_sections(running: ServiceConfig, on_disk: ServiceConfig) -> list[str]:
    """Top-level sections other than ``rules`` that differ between the running config and the file."""
    changed = []
    for name in type(running).model_fields:
        if name == "rules":
            continue
        if getattr(running, name) != getattr(on_disk, name):
            changed.append(name)
    return changed


def _alerting(config: ServiceConfig, store: ClickHouseStore) -> AlertEvaluator:
    """The alert evaluator; a PagerDuty receiver whose routing-key variable is unset fails start-up here."""
    missing = [
        f"alerts[{index}].notify: environment variable {target.pagerduty.routing_key_env} is not set"
        for index, alert in enumerate(config.alerts)
        for target in alert.notify
        if isinstance(target, PagerDutyTarget) and not os.environ.get(target.pagerduty.routing_key_env)
    ]
    if missing:
        raise ConfigError("config: " + "; ".join(missing))
    spool = config.storage.spool_dir
    return AlertEvaluator(
        config.alerts,
        config.alerting,
        functools.partial(window_scores, store),
        Notifier(config.alerting),
        state_file=Path(spool) / "alerts-state.json" if spool else None,
    )


def _import_paths(rules: Sequence[RuleConfig]) -> frozenset[str]:
    """The import-path scorers a config file names: code the operator chose, which API rules may reuse."""
    return frozenset(spec.name for rule in rules for spec in rule.scorers if ":" in spec.name)
