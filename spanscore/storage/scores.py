"""Score and decision rows: the hot-path records behind ``scores`` and ``score_decisions``.

The score id is a hash of what identifies a score (rule, scorer, scorer version,
trace id, scored span id; for a session, the session id in place of the trace and
span, so a rescored session replaces its earlier scores) and nothing else, so a retried job, a replayed trace
or a second replica produces the same id and ReplacingMergeTree keeps one row.
``Version`` is the write time in nanoseconds: the newest attempt wins.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SCORE_COLUMNS = (
    "ScoreId", "Timestamp", "RunTimestamp", "TraceId", "SpanId", "RunId", "ServiceName", "AgentName", "Model",
    "SessionId", "UserId", "Rule", "Scorer", "ScorerVersion", "Score", "Label", "Reason", "Status", "Error",
    "SampleRate", "HigherIsBetter", "JudgeModel", "InputTokens", "OutputTokens", "CostUsd", "DurationMs",
    "ReadyReason", "RunDurationMs", "RunError", "Attributes", "Version", "RuleVersion", "Source", "Author", "Target",
)  # fmt: skip

DECISION_COLUMNS = (
    "Timestamp", "RunTimestamp", "TraceId", "SpanId", "RunId", "ServiceName", "AgentName", "Rule", "Decision",
    "Probability", "Reason", "ReadyReason", "Version", "RuleVersion", "Target",
)  # fmt: skip


VERSION_PREFIX = "version."
"""A score's ``Attributes`` key for a run's version attribute: ``version.service.version`` (docs/compare.md)."""
RUN_TOKENS = ("run.input_tokens", "run.output_tokens")
"""A score's ``Attributes`` keys for the run's own model tokens (not the judge's, which have their columns)."""
RUN_COST = "run.cost_usd"
"""A score's ``Attributes`` key for what the run's own model calls cost in USD; absent when unknown (never 0)."""


def external_score_id(source: str, author: str, name: str, trace_id: str, span_id: str) -> str:
    """Deterministic id of an outside score: a resent one replaces itself, two authors' labels stay apart."""
    return score_id(f"source:{source}", name, f"author:{author}", trace_id, span_id)


def score_id(rule: str, scorer: str, scorer_version: str, trace_id: str, span_id: str) -> str:
    """Deterministic id of one score: the same inputs always give the same 32 hex characters."""
    key = "\x1f".join((rule, scorer, scorer_version, trace_id, span_id)).encode("utf-8")
    return hashlib.sha256(key).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class RunColumns:
    """The columns that say which run a row is about; score and decision rows both start with them."""

    run_timestamp_ns: int
    trace_id: str
    span_id: str
    run_id: str
    service_name: str
    agent_name: str


@dataclass(frozen=True, slots=True)
class ScoreRow(RunColumns):
    score_id: str
    model: str
    session_id: str
    user_id: str
    rule: str
    scorer: str
    scorer_version: str
    score: float | None
    label: str
    reason: str
    status: str
    error: str
    sample_rate: float
    higher_is_better: bool
    judge_model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """None when litellm could not price a judge call of the score: unknown (NULL), not 0 (migration 0017)."""
    duration_ms: float
    ready_reason: str
    run_duration_ms: float
    run_error: str
    attributes: dict[str, str] = field(default_factory=dict)
    timestamp_ns: int = field(default_factory=time.time_ns)
    rule_version: str = ""
    """Content hash of the rule set the run was dispatched under (spanscore.sampling.rule_sets)."""
    source: str = "spanscore"
    """Who scored: ``spanscore`` for its own scorers, else the sender's source (``human``, ``app``, ``otlp``)."""
    author: str = ""
    """Who gave an outside score (a person's name or an evaluator's), when the sender said."""
    target: str = "run"
    """What was scored (``spanscore.run.TARGETS``): a run, one LLM call, tool or retrieval span, or a session."""

    def columns(self) -> tuple[Any, ...]:
        return (
            self.score_id, self.timestamp_ns, self.run_timestamp_ns, self.trace_id, self.span_id, self.run_id,
            self.service_name, self.agent_name, self.model, self.session_id, self.user_id, self.rule, self.scorer,
            self.scorer_version, self.score, self.label, self.reason, self.status, self.error, self.sample_rate,
            self.higher_is_better, self.judge_model, self.input_tokens, self.output_tokens, self.cost_usd,
            self.duration_ms, self.ready_reason, self.run_duration_ms, self.run_error, self.attributes,
            self.timestamp_ns, self.rule_version, self.source, self.author, self.target,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class DecisionRow(RunColumns):
    rule: str
    decision: str
    probability: float
    reason: str
    ready_reason: str
    timestamp_ns: int = field(default_factory=time.time_ns)
    rule_version: str = ""
    target: str = "run"

    def columns(self) -> tuple[Any, ...]:
        return (
            self.timestamp_ns, self.run_timestamp_ns, self.trace_id, self.span_id, self.run_id, self.service_name,
            self.agent_name, self.rule, self.decision, self.probability, self.reason, self.ready_reason,
            self.timestamp_ns, self.rule_version, self.target,
        )  # fmt: skip


def to_columns(rows: Sequence[ScoreRow] | Sequence[DecisionRow]) -> list[list[Any]]:
    """Transpose rows into the column lists an insert takes."""
    if not rows:
        return []
    return [list(column) for column in zip(*(row.columns() for row in rows), strict=True)]
