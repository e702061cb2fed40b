"""Sampling: which runs each rule scores, decided from the trace id so every replica agrees.

``rules.load_sampling_config`` validates the ``rules:`` section once;
``engine.RuleEngine`` turns each ready run into one ``Decision`` per rule;
``engine.preview_*`` give the same answers without caps for preview and
backfill. ``filters`` is the only filter implementation; ``hashing`` holds the
consistent-probability arithmetic; ``budget`` the token bucket and daily budget.
"""

from spanscore.sampling.budget import Clock, DailyBudget, TokenBucket
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.sampling.engine import RuleEngine, RunKey, Sampler, preview_decisions, preview_mapping, preview_run
from spanscore.sampling.filters import MATCH_ALL, Filter, FilterError, parse_filter
from spanscore.sampling.hashing import TraceIdError, is_sampled, parse_ot_tracestate, threshold_for
from spanscore.sampling.rules import (
    AlwaysConfig,
    BudgetConfig,
    RuleConfig,
    SamplingConfig,
    ScorerSpec,
    describe_validation_error,
    load_sampling_config,
)
from spanscore.sampling.subject import FilterSubject, subject_from_mapping, subject_from_run

__all__ = [
    "MATCH_ALL",
    "AlwaysConfig",
    "BudgetConfig",
    "Clock",
    "DailyBudget",
    "Decision",
    "Filter",
    "FilterError",
    "FilterSubject",
    "Outcome",
    "RuleConfig",
    "RuleEngine",
    "RunKey",
    "Sampler",
    "SamplingConfig",
    "ScorerSpec",
    "TokenBucket",
    "TraceIdError",
    "describe_validation_error",
    "is_sampled",
    "load_sampling_config",
    "parse_filter",
    "parse_ot_tracestate",
    "preview_decisions",
    "preview_mapping",
    "preview_run",
    "subject_from_mapping",
    "subject_from_run",
    "threshold_for",
]
