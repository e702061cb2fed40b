"""What the API asks of a running service besides SQL: posted scores, rule previews, backfills, alert states.

Kept apart from the wiring in ``service.py``: each operation reads the service's current config (the rules
change at run time) and its store, and none of them starts or stops anything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.collector.outside_rows import ScoredSpan
from spanscore.config import ServiceConfig
from spanscore.durations import parse_since
from spanscore.errors import ConflictError
from spanscore.offline.backfill import BackfillProgress, backfill, find_rule, preview
from spanscore.redaction.config import RedactionPolicies
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.feedback import PENDING_SPAN, parse_scores, row_for_posted, row_for_unresolved
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.outside_scores import scored_spans
from spanscore.storage.scores import ScoreRow
from spanscore.storage.write.writer import BatchWriter

if TYPE_CHECKING:
    from spanscore.scorers.judge.current import Judge

log = logging.getLogger(__name__)


class ServiceOperations:
    """The API's operations on one service: ``POST /api/v1/scores``, preview, backfill, alerts, rule list."""

    def __init__(
        self,
        config: ServiceConfig,
        store: ClickHouseStore,
        feedback_writer: BatchWriter[ScoreRow],
        alerting: AlertEvaluator,
        judge: Callable[[], Judge | None],
    ) -> None:
        self._config = config
        self._store = store
        self._feedback_writer = feedback_writer
        self._alerting = alerting
        self._judge = judge
        """The service's judge, which exists only once there are rules: read at each call, not at start."""
        self.backfill_progress: BackfillProgress | None = None
        self.after_backfill: Callable[[], Awaitable[None]] | None = None
        """Run once a backfill ended (the service recounts the scores standing in an error)."""
        self._backfills: dict[str, BackfillProgress] = {}

    def alerting_state(self) -> list[dict[str, Any]]:
        """GET /api/v1/alerts: every alert with its latest value, interval and status."""
        return self._alerting.describe()

    async def add_scores(self, document: Any) -> dict[str, Any]:
        """POST /api/v1/scores: validate every item, attach each to its span, store them all or none.

        A score whose span storage does not hold yet is stored too, unresolved, and attached once the span
        arrives (``FeedbackResolver``): an application may post the moment it has a trace id.
        """
        scores = parse_scores(document)
        wanted = [(score.trace_id, score.span_id) for score in scores]
        facts = await asyncio.to_thread(scored_spans, self._store, wanted)
        now = time.time_ns()
        rows = [
            row_for_posted(score, ScoredSpan(*facts[key])) if (key := (score.trace_id, score.span_id)) in facts
            else row_for_unresolved(score, now)
            for score in scores
        ]  # fmt: skip
        await self._feedback_writer.consume(rows)
        unresolved = [row.score_id for row in rows if PENDING_SPAN in row.attributes]
        return {"stored": len(rows), "score_ids": [row.score_id for row in rows], "unresolved": unresolved}

    async def preview(self, rule_name: str, since: str, rules: list[RuleConfig] | None = None) -> dict[str, Any]:
        """Matched, sampled and estimated judge calls over a past window, of a running rule or one in ``rules``.

        ``rules`` are not applied anywhere: a rule's cost is seen before it is live and paying the judge.
        """
        if rules is None:
            rule = find_rule(self._config.rules, rule_name)
        else:
            rule = find_rule(rules, rule_name, where="rules given")
        runs = self._config.collector.runs
        redactor = RedactionPolicies(self._config.redact).for_rule(rule.redact)  # as the rule's judges would mask
        result = await asyncio.to_thread(preview, self._store, rule, parse_since(since), runs, self._judge(), redactor)
        return result.as_dict()

    async def backfill(self, rule_name: str, since: str) -> dict[str, Any]:
        """Score a rule's stored runs; one backfill per rule at a time, so two never judge the same runs."""
        rule = find_rule(self._config.rules, rule_name)
        running = self._backfills.get(rule.name)
        if running is not None and not running.finished:
            figures = running.as_dict()
            raise ConflictError(
                f"a backfill of rule {rule.name!r} is already running ({figures['done']}/{figures['total']} runs); "
                f"wait for it, or cancel it: spanscore backfill --cancel {rule.name}"
            )
        self.backfill_progress = self._backfills[rule.name] = progress = BackfillProgress(rule.name)
        runs, scoring = self._config.collector.runs, self._config.scoring
        try:
            return await backfill(
                self._store, rule, parse_since(since), runs, scoring, progress, self._judge(), self._config.redact
            )
        finally:
            progress.finished = True
            await self._after_backfill()

    async def _after_backfill(self) -> None:
        if self.after_backfill is not None:
            try:
                await self.after_backfill()
            except Exception as exc:  # the backfill's answer matters more than a recount
                log.warning("scores in error not recounted after the backfill: %s", exc)

    async def cancel_backfill(self, rule_name: str | None = None) -> dict[str, Any]:
        """Ask running backfills (this rule's, or every one) to stop after their chunk; scored runs stay written.

        The answer names each backfill it cancelled, so a cancel never stops a job its caller did not mean.
        """
        running = {name: p for name, p in self._backfills.items() if not p.finished}
        chosen = running if rule_name is None else {k: v for k, v in running.items() if k == rule_name}
        if not chosen:
            where = "" if rule_name is None else f" of rule {rule_name!r}"
            others = f" (running: {', '.join(sorted(running))})" if running else ""
            return {"cancelled": False, "reason": f"no backfill{where} is running{others}", "rules": []}
        for progress in chosen.values():
            progress.cancel()
        first = next(iter(chosen.values()))
        return {"cancelled": True, "rules": sorted(chosen), "progress": first.as_dict()}

    def backfill_metrics(self) -> dict[str, float]:
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
                # A scorer's scale option (scores 0..scale): the dashboard draws it on its own axis.
                "scales": {s.name: s.options["scale"] for s in rule.scorers if _numeric(s.options.get("scale"))},
            }
            for rule in self._config.rules
        ]


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
