"""How far a judge agrees with people: pass/fail agreement, Cohen's kappa, mean absolute score difference.

A pair is one human (or other outside) judgement of a run next to spanscore's own score of the same run by
the scorer being checked. Labels are compared as pass/fail; kappa corrects the raw agreement for what two
raters with the same pass rates would agree on by chance:

    p_o = agreeing pairs / pairs
    p_e = P(judge pass) * P(human pass) + P(judge fail) * P(human fail)
    kappa = (p_o - p_e) / (1 - p_e)        (undefined when p_e = 1: both always say the same one label)

The mean absolute difference is over the pairs where both sides have a numeric score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Pair:
    judge_label: str
    human_label: str
    judge_score: float | None = None
    human_score: float | None = None


@dataclass(frozen=True, slots=True)
class Agreement:
    pairs: int
    labelled_pairs: int
    agreement: float | None
    kappa: float | None
    scored_pairs: int
    mean_absolute_difference: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "pairs": self.pairs,
            "labelled_pairs": self.labelled_pairs,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "scored_pairs": self.scored_pairs,
            "mean_absolute_difference": self.mean_absolute_difference,
        }


def agreement(pairs: Sequence[Pair]) -> Agreement:
    """The figures above; a pair whose labels are not both pass/fail counts only toward the score difference."""
    labelled = [p for p in pairs if {p.judge_label, p.human_label} <= {"pass", "fail"}]
    observed = kappa = None
    if labelled:
        n = len(labelled)
        observed = sum(p.judge_label == p.human_label for p in labelled) / n
        judge_pass = sum(p.judge_label == "pass" for p in labelled) / n
        human_pass = sum(p.human_label == "pass" for p in labelled) / n
        chance = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
        kappa = None if chance >= 1 else (observed - chance) / (1 - chance)
    scored = [p for p in pairs if p.judge_score is not None and p.human_score is not None]
    difference = (
        sum(abs(p.judge_score - p.human_score) for p in scored) / len(scored)  # type: ignore[operator]
        if scored
        else None
    )
    return Agreement(len(pairs), len(labelled), observed, kappa, len(scored), difference)
