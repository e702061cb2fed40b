"""What the dispatcher decides on (a ``Subject``) and what it keeps per rule while the jobs run (``RuleRun``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from spanscore.export.forward import INTERNAL_ATTRIBUTE
from spanscore.run import Run
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.scorers.base import Status
from spanscore.scorers.judge.tracing import JUDGE_SPAN_ATTRIBUTE


@dataclass(frozen=True, slots=True)
class Subject:
    """One thing rules decide on: a run, a span-level view of one, or a session; why it is ready now."""

    run: Run
    ready_reason: str
    fingerprint: str = ""
    """The readiness fingerprint when the assembler made one (runs); otherwise computed only if a score is written."""
    too_large: str = ""
    """Why run assembly cut the run, or evicted it at a bound before it was ready, or empty: decided ``too_large``."""
    shed: str = ""
    """Why it is not scored although its rules draw as usual (scoring was behind: ``RunAssembler.shed_evicted``),
    or empty: a ``sampled`` draw is decided ``too_large`` with this reason, and nothing is judged."""
    done: frozenset[tuple[str, str]] = frozenset()
    """(rule, scorer) pairs already scored by a fleet replica that died before the rest (``scoring.claim_check``):
    decided as usual, but not judged again."""


@dataclass(slots=True)
class RuleRun:
    """Bookkeeping for one rule on one subject: how many jobs are out and how they ended."""

    decision: Decision
    subject: Subject
    outstanding: int
    statuses: Counter[str] = field(default_factory=Counter)
    rule_version: str = ""
    spent_usd: float = 0.0
    spent_tokens: int = 0
    """What this rule-run's judge calls cost so far: the rule's budget learns a run's cost from it."""
    grant: object | None = None
    """In a fleet, a session's leave to be scored (``fleet.fence``): its scores are written only while it holds."""

    def refined(self) -> Outcome | None:
        """Once every job ended: why a sampled rule-run produced no score at all, or None when one scored."""
        if self.statuses[Status.OK.value]:
            return None
        for status, outcome in (
            (Status.ERROR.value, Outcome.FAILED),
            (Status.MISSING_INPUT.value, Outcome.MISSING_INPUT),
            (Status.NOT_APPLICABLE.value, Outcome.NOT_APPLICABLE),
        ):
            if self.statuses[status]:
                return outcome
        return None


def is_internal(run: Run) -> bool:
    """Runs made of spanscore's own evaluation spans and judge calls are never scored (no loops).

    The exporter marks its resource and its evaluation spans; judge-call spans carry their own attribute.
    """
    return any(
        attributes.get(INTERNAL_ATTRIBUTE) == "true" or attributes.get(JUDGE_SPAN_ATTRIBUTE) == "true"
        for attributes in (run.attributes, run.resource_attributes)
    )
