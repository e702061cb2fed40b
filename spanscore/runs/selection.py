"""Which ready runs a rule set can select: readiness builds only those in full (#43).

A rule that selects little or nothing still has every run of every trace assembled, sampled and given a
``filtered_out`` decision row per rule (the coverage denominator). Building the whole run (input, output, tool
calls, context, usage, versions, the fingerprint) cost about as much as the rest of readiness together, for runs
no rule then looks at beyond its ``where``. So readiness first builds a run's filter view
(``RunFields.filter_view``: every field a filter or a decision row reads, picked exactly as the full build picks
it), asks ``run_selector`` whether any rule's ``where`` matches it, and builds the rest only then. A run no rule
can select is handed on as its filter view: every rule decides ``filtered_out`` on it, as on the full run.

The view keeps how to build the full run (``ReadyRun.complete``): if the rules change between readiness and the
dispatch, ``completed_if_selected`` builds every view the new rules may select before they decide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spanscore.run import Run
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import ReadyRun
from spanscore.sampling.rules import RuleConfig
from spanscore.sampling.subject import subject_from_run

RunSelector = Callable[[Run], bool]
"""True when some rule's ``where`` matches the run's filter view: the run must be built in full."""


def run_selector(rules: Sequence[RuleConfig], config: RunsConfig) -> RunSelector | None:
    """The test readiness asks before building a run in full, or None when every run must be built.

    None when a rule decides on something made from the full run (its LLM calls, tools or retrievals, its
    session), or when a late span may rescore a run: the fingerprint of what scorers read decides that.
    """
    if config.late_span_policy == "rescore" or any(rule.target != "run" for rule in rules):
        return None
    filters = tuple(rule.where for rule in rules)

    def selects(run: Run) -> bool:
        subject = subject_from_run(run)
        return any(where.matches_subject(subject) for where in filters)

    return selects


def completed_if_selected(ready: Sequence[ReadyRun], selects: RunSelector | None) -> list[ReadyRun]:
    """``ready`` with each filter view that ``selects`` (the rules now in force) may select built in full."""
    return [
        item.completed() if item.complete is not None and (selects is None or selects(item.run)) else item
        for item in ready
    ]
