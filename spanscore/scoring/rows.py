"""Score and decision rows: what a finished job and a rule's decision look like in storage."""

from __future__ import annotations

from typing import Any

from spanscore.redaction.shown import judge_sent_attributes
from spanscore.run import Run
from spanscore.runs.assembly import run_fingerprint
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.scorers.base import ScoreResult, ScorerInfo, Status
from spanscore.scorers.bounds import CUT_ATTRIBUTE, describe_cuts
from spanscore.scorers.context_used import ATTRIBUTE as CONTEXT_ATTRIBUTE
from spanscore.scoring.run_cost import run_cost
from spanscore.scoring.subject import RuleRun, Subject
from spanscore.storage.scores import (
    RUN_COST,
    RUN_TOKENS,
    VERSION_PREFIX,
    DecisionRow,
    ScoreRow,
    score_id,
)


def run_columns(run: Run) -> dict[str, Any]:
    """The ``RunColumns`` of a row about ``run``, as keyword arguments for a score or decision row.

    Spelt out rather than ``dataclasses.asdict``, whose deep copies of six strings cost a third of a decision
    row (#43: a row per rule for every run, most of them ``filtered_out``).
    """
    columns: dict[str, Any] = {
        "run_timestamp_ns": run.start_time_ns,
        "trace_id": run.trace_id,
        "span_id": run.span_id,
        "run_id": run.run_id,
        "service_name": run.service_name or "",
        "agent_name": run.agent_name or "",
    }
    return columns


def score_row(
    info: ScorerInfo,
    run: Run,
    book: RuleRun,
    result: ScoreResult,
    *,
    pass_threshold: float,
    context_source: str | None = None,
) -> ScoreRow:
    """The row of one scorer's result; its id is deterministic, so a rescore or a retry replaces, never adds.

    ``context_source`` is the context a context scorer read (``spanscore.scorers.context_used``), stored so the
    run page names it: a run judged against its tool results has no retrieved context, and is not "missing" one.
    """
    attributes = {"run.fingerprint": book.subject.fingerprint or run_fingerprint(run)}
    if context_source is not None:
        attributes[CONTEXT_ATTRIBUTE] = context_source
    if run.parent_run_id:
        attributes["run.id"] = run.parent_run_id
    if run.turns is not None:
        attributes["session.turns"] = str(len(run.turns))
    if result.judge_mode:
        attributes["judge.mode"] = result.judge_mode  # as sent on the wire, not as asked for
    if not result.cost_known:
        attributes["judge.cost"] = "unknown"  # and CostUsd is NULL: unknown, never a 0 that sums
    if result.cuts:
        attributes[CUT_ATTRIBUTE] = describe_cuts(result.cuts)  # the score is of the text's start only
    attributes.update(judge_sent_attributes(result.prompts, result.redactions))
    attributes.update(_version_attributes(run))
    # A session is identified by its id, not by the run it currently ends with: a rescore replaces.
    trace_key, span_key = ("session", run.run_id) if run.target == "session" else (run.trace_id, run.span_id)
    return ScoreRow(
        score_id=score_id(book.decision.rule, info.id, info.version, trace_key, span_key),
        **run_columns(run),
        model=run.model or "",
        session_id=run.session_id or "",
        user_id=run.user_id or "",
        rule=book.decision.rule,
        scorer=info.id,
        scorer_version=info.version,
        score=result.score if result.status is Status.OK else None,
        label=label(result, info.higher_is_better, pass_threshold),
        reason=result.reason or "",
        status=result.status.value,
        error=result.error or ", ".join(result.missing_fields),
        sample_rate=book.decision.probability,
        higher_is_better=info.higher_is_better,
        judge_model=result.judge_model or "",
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cost_usd=result.cost_usd if result.cost_known else None,
        duration_ms=result.duration_ms,
        ready_reason=book.subject.ready_reason,
        run_duration_ms=max(0, run.end_time_ns - run.start_time_ns) / 1e6,
        run_error=run.error or "",
        attributes=attributes,
        rule_version=book.rule_version,
        target=run.target,
    )


def _version_attributes(run: Run) -> dict[str, str]:
    """What version of the agent ran and what its model calls used, so versions can be compared by score."""
    found = {VERSION_PREFIX + key: value for key, value in run.version_attributes.items()}
    if run.usage.input_tokens or run.usage.output_tokens:
        found.update(zip(RUN_TOKENS, (str(run.usage.input_tokens), str(run.usage.output_tokens)), strict=True))
    cost = run_cost(run)
    if cost is not None:
        found[RUN_COST] = repr(cost)
    return found


def label(result: ScoreResult, higher_is_better: bool, pass_threshold: float) -> str:
    """``pass`` / ``fail`` against the threshold for a score; the status itself when there is none."""
    if result.status is not Status.OK or result.score is None:
        return result.status.value
    passed = result.score >= pass_threshold if higher_is_better else result.score <= pass_threshold
    return "pass" if passed else "fail"


def decision_row(
    decision: Decision, subject: Subject, outcome: Outcome | None = None, *, rule_version: str = ""
) -> DecisionRow:
    """One rule's decision on one subject (the coverage denominator); ``outcome`` refines a sampled one."""
    run = subject.run
    return DecisionRow(
        **run_columns(run),
        rule=decision.rule,
        decision=(outcome or decision.outcome).value,
        probability=decision.probability,
        reason=decision.reason,
        ready_reason=subject.ready_reason,
        rule_version=rule_version,
        target=run.target,
    )
