"""What sampling answers for one rule and one run: the row behind ``score_decisions``.

Every candidate run gets one ``Decision`` per rule, whatever the outcome, so
coverage always has a denominator. The sampling engine produces ``sampled``,
``filtered_out``, ``sampled_out``, ``over_budget``, ``duplicate`` and (for a
run whose trace id cannot be hashed) ``failed``; the scoring stage replaces a
``sampled`` decision with ``missing_input``, ``not_applicable`` or ``failed``
when that is how scoring ended (``dataclasses.replace`` keeps the rest). A run
cut for size, or evicted at one of run assembly's memory bounds before it was ready, is ``too_large`` for
every rule whose population holds it: it is not scored, since what was dropped (or never waited for) is
usually its answer (the root span ends, and arrives, last).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.StrEnum):
    """Why a run was or was not scored by a rule; the values are the stored strings."""

    SAMPLED = "sampled"
    FILTERED_OUT = "filtered_out"
    SAMPLED_OUT = "sampled_out"
    OVER_BUDGET = "over_budget"
    MISSING_INPUT = "missing_input"
    NOT_APPLICABLE = "not_applicable"
    DUPLICATE = "duplicate"
    FAILED = "failed"
    TOO_LARGE = "too_large"


@dataclass(frozen=True, slots=True)
class Decision:
    """One rule's answer for one run.

    ``probability`` is the inclusion probability the draw used: the rule's
    rate, lowered by its budget, or 1.0 for an ``always`` override. It is 0.0
    for ``filtered_out`` (the run is outside the rule's population) and for an
    exhausted budget. Scores copy it so SQL can weight by ``1 / probability``.
    """

    rule: str
    run_id: str
    trace_id: str
    outcome: Outcome
    probability: float
    reason: str

    @property
    def sampled(self) -> bool:
        """Whether the run should go on to the rule's scorers."""
        return self.outcome is Outcome.SAMPLED
