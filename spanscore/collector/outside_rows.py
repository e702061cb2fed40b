"""Outside evaluation results as score rows: the one shape of a score spanscore did not compute.

Both ways an outside score arrives build their row here: ``gen_ai.evaluation.result`` events that ride in
with spans and logs (``EvaluationTap``, on the ingest path) and scores posted to ``POST /api/v1/scores``
(``spanscore.scoring.feedback``). The row's ``Rule`` is ``source:<source>`` and its id is deterministic in
(source, author, name, trace, span), so a re-sent export or a retried POST replaces the row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from spanscore.collector.evaluation_events import OutsideEvaluation
from spanscore.storage.scores import ScoreRow, external_score_id

PASS_LABELS = frozenset({"pass", "up", "thumbs_up", "good", "yes", "correct", "true"})
FAIL_LABELS = frozenset({"fail", "down", "thumbs_down", "bad", "no", "incorrect", "false"})


@dataclass(frozen=True, slots=True)
class ScoredSpan:
    """What storage knows of the scored span: where the score attaches and the run facts roll-ups group by."""

    span_id: str
    start_time_ns: int
    service_name: str = ""
    agent_name: str = ""
    session_id: str = ""


def label_of(label: str | None, value: float | None, higher_is_better: bool, threshold: float = 0.5) -> str:
    """``pass``/``fail`` from a known label word, else from the value against the pass threshold, else the label."""
    word = (label or "").strip().lower()
    if word in PASS_LABELS:
        return "pass"
    if word in FAIL_LABELS:
        return "fail"
    if not word and value is not None:
        passed = value >= threshold if higher_is_better else value <= threshold
        return "pass" if passed else "fail"
    return label or ""


def row_for_evaluation(evaluation: OutsideEvaluation) -> ScoreRow:
    span = ScoredSpan(evaluation.span_id, evaluation.time_ns, evaluation.service_name)
    return outside_score_row(
        source="otlp",
        author=evaluation.author,
        name=evaluation.name,
        trace_id=evaluation.trace_id,
        span=span,
        value=evaluation.value,
        label=label_of(evaluation.label, evaluation.value, True),
        reason=evaluation.explanation,
        higher_is_better=True,
        raw_label=evaluation.label,
    )


def outside_score_row(
    *,
    source: str,
    author: str,
    name: str,
    trace_id: str,
    span: ScoredSpan,
    value: float | None,
    label: str,
    reason: str,
    higher_is_better: bool,
    raw_label: str,
) -> ScoreRow:
    return ScoreRow(
        score_id=external_score_id(source, author, name, trace_id, span.span_id),
        run_timestamp_ns=span.start_time_ns or time.time_ns(),
        trace_id=trace_id,
        span_id=span.span_id,
        run_id=span.span_id,
        service_name=span.service_name,
        agent_name=span.agent_name,
        model="",
        session_id=span.session_id,
        user_id="",
        rule=f"source:{source}",
        scorer=name,
        scorer_version="external",
        score=value,
        label=label,
        reason=reason,
        status="ok",
        error="",
        sample_rate=1.0,
        higher_is_better=higher_is_better,
        judge_model="",
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
        duration_ms=0.0,
        ready_reason="",
        run_duration_ms=0.0,
        run_error="",
        attributes={"label": raw_label} if raw_label and raw_label != label else {},
        source=source,
        author=author,
    )
