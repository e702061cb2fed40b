"""The sampling stage: one ``Decision`` per rule for every run that is ready to score.

Per rule, in order: the ``where`` filter (else ``filtered_out``), the
``always`` overrides (probability 1), the daily budget (which lowers the
rate, or ``over_budget`` once spent), the consistent hash at that rate (else
``sampled_out``), duplicate suppression, and the token bucket (else
``over_budget``). ``preview_decisions`` is the same filter, override and hash
without the stateful caps, for the preview and backfill paths; with no caps
configured the live engine and the preview agree exactly.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from spanscore.run import Run
from spanscore.sampling.budget import Clock, DailyBudget, TokenBucket
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.sampling.hashing import TraceIdError, randomness_for, session_randomness, threshold_for
from spanscore.sampling.rules import RuleConfig, SamplingConfig
from spanscore.sampling.subject import FilterSubject, subject_from_mapping, subject_from_run

logger = logging.getLogger(__name__)


class Sampler(Protocol):
    """The seam the service calls: one decision per configured rule for each ready run."""

    def decide(self, run: Run, *, rescore: bool = False) -> list[Decision]: ...


@dataclass(frozen=True, slots=True)
class RunKey:
    """What a decision needs besides the filter view: the run's ids and its root span's W3C tracestate."""

    run_id: str
    trace_id: str
    trace_state: str = ""
    target: str = "run"
    """What is decided on (``spanscore.run.TARGETS``): only the rules of this target decide. A span target's
    ``run_id`` is the span's id; a session's is the session id, and its draw hashes that id."""

    @classmethod
    def of_run(cls, run: Run) -> RunKey:
        return cls(run_id=run.run_id, trace_id=run.trace_id, trace_state=run.trace_state, target=run.target)

    @classmethod
    def of_mapping(cls, row: Mapping[str, Any]) -> RunKey:
        """Ids from a stored row: ``run_id``/``trace_id``/``trace_state`` or the otel_traces columns."""
        trace_id = str(row.get("trace_id") or row.get("TraceId") or "")
        run_id = str(row.get("run_id") or row.get("span_id") or row.get("SpanId") or trace_id)
        return cls(
            run_id=run_id,
            trace_id=trace_id,
            trace_state=str(row.get("trace_state") or row.get("TraceState") or ""),
            target=str(row.get("target") or "run"),
        )


def override_reason(rule: RuleConfig, subject: FilterSubject) -> str | None:
    """Why an ``always`` override forces this run in, or None when none applies."""
    if rule.always.errors and subject.fields.get("error") is True:
        return "always: the run ended in an error"
    if rule.always.where is not None and rule.always.where.matches_subject(subject):
        return "always: matched always.where"
    return None


def draw(rule: RuleConfig, key: RunKey, probability: float, override: str | None) -> Decision:
    """The consistent-hash part of a decision: ``sampled``, ``sampled_out`` or ``failed`` (bad trace id).

    The decision carries ``probability`` as configured (or as the budget
    lowered it), not its 56-bit quantized form: they differ by less than
    2**-56, and ``0.01`` reads better in SQL than ``0.009999999999999995``.
    """
    if override is not None:
        return _decision(rule, key, Outcome.SAMPLED, 1.0, override)
    try:
        if key.target == "session":
            randomness = session_randomness(key.run_id, salt=rule.salt)
        else:
            randomness = randomness_for(key.trace_id, salt=rule.salt, trace_state=key.trace_state)
    except TraceIdError as error:
        return _decision(rule, key, Outcome.FAILED, probability, f"cannot sample: {error}")
    if randomness >= threshold_for(probability):
        return _decision(rule, key, Outcome.SAMPLED, probability, f"in the {probability:.6g} sample")
    return _decision(rule, key, Outcome.SAMPLED_OUT, probability, f"outside the {probability:.6g} sample")


def preview_decisions(rules: Sequence[RuleConfig], subject: FilterSubject, key: RunKey) -> list[Decision]:
    """Stateless decisions (no token bucket, no budget, no duplicate memory) for preview and backfill."""
    decisions = []
    for rule in rules:
        if rule.target != key.target:
            continue
        if not rule.where.matches_subject(subject):
            decisions.append(_decision(rule, key, Outcome.FILTERED_OUT, 0.0, "did not match where"))
        else:
            decisions.append(draw(rule, key, rule.sample, override_reason(rule, subject)))
    return decisions


def preview_run(rules: Sequence[RuleConfig], run: Run) -> list[Decision]:
    """``preview_decisions`` for a ``Run``."""
    return preview_decisions(rules, subject_from_run(run), RunKey.of_run(run))


def preview_mapping(rules: Sequence[RuleConfig], row: Mapping[str, Any]) -> list[Decision]:
    """``preview_decisions`` for a stored row (see ``subject_from_mapping`` for the accepted keys)."""
    return preview_decisions(rules, subject_from_mapping(row), RunKey.of_mapping(row))


class RuleEngine:
    """The live sampler: deterministic per trace, plus per-rule caps that need memory and a clock.

    Not thread-safe; the service calls it from its one event loop.
    """

    def __init__(self, config: SamplingConfig, *, clock: Clock = time.time) -> None:
        self.config = config
        self._clock = clock
        self.rules: Mapping[str, RuleConfig] = {rule.name: rule for rule in config.rules}
        self._buckets = {
            rule.name: TokenBucket(rule.max_per_minute, clock=clock)
            for rule in config.rules
            if rule.max_per_minute is not None
        }
        self._budgets = {
            rule.name: DailyBudget(rule.budget.limit, clock=clock) for rule in config.rules if rule.budget is not None
        }
        self._sampled: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._fleet_share: tuple[int, Mapping[str, tuple[float, int]]] | None = None
        self._leases = False

    def with_rules(self, config: SamplingConfig) -> RuleEngine:
        """A new engine for a new rule set that carries on the state of the rules that did not change.

        A rule identical in both sets keeps its ``max_per_minute`` bucket and today's budget spend, so a
        reload does not reset caps; a changed rule starts afresh (its limits may be different), and the memory
        of sampled runs is kept for every rule still present so a reload does not score a run twice.
        """
        engine = RuleEngine(config, clock=self._clock)
        for name, rule in engine.rules.items():
            old = self.rules.get(name)
            if old is None or old.model_dump(mode="json") != rule.model_dump(mode="json"):
                continue
            if name in self._buckets:
                engine._buckets[name] = self._buckets[name]
            if name in self._budgets:
                engine._budgets[name] = self._budgets[name]
        engine._sampled = OrderedDict((key, None) for key in self._sampled if key[0] in engine.rules)
        if self._leases:  # a fleet replica: a new budget spends only what it is granted
            engine.use_leases()
        if self._fleet_share is not None:  # a fleet replica: new rules start at its share, not the whole cap
            engine.set_fleet_share(*self._fleet_share)
        return engine

    def decide(self, run: Run, *, rescore: bool = False, shed: str = "") -> list[Decision]:
        """One decision per rule, in rule order, for a live run.

        A run already sampled by a rule comes back as ``duplicate``, unless
        ``rescore`` says the caller hands it in again on purpose (its content
        changed after a late span); the caps still apply then. The draw uses the
        ``rv`` randomness of ``run.trace_state`` when the root span carried one.
        ``shed`` says why the run will not be scored (scoring was behind): the
        rules filter and draw as usual, and a ``sampled`` draw is ``too_large``
        with that reason; it takes nothing from a ``max_per_minute`` cap, a
        budget or the duplicate memory, which belong to the runs scored.
        """
        return self.decide_subject(subject_from_run(run), RunKey.of_run(run), rescore=rescore, shed=shed)

    def decide_too_large(self, run: Run, why: str) -> list[Decision]:
        """One decision per rule for a run that run assembly cut, or evicted at a memory bound (``why`` says which).

        A rule whose population holds the run decides ``too_large`` (probability 0, no draw, nothing
        reserved), so coverage counts it; the others decide ``filtered_out`` as usual.
        """
        subject, key = subject_from_run(run), RunKey.of_run(run)
        return [
            _decision(rule, key, Outcome.TOO_LARGE, 0.0, f"not scored: {why}")
            if rule.where.matches_subject(subject)
            else _decision(rule, key, Outcome.FILTERED_OUT, 0.0, "did not match where")
            for rule in self.config.rules
            if rule.target == key.target
        ]

    def budget_demand(self, runs: Sequence[Run]) -> dict[str, float]:
        """Per rule with a daily budget: how many of these runs it would likely sample (overrides count whole).

        A fleet replica leases for a burst with this before deciding it (``scoring.fleet_budgets``).
        """
        demand: dict[str, float] = {}
        if not self._budgets or not runs:
            return demand
        subjects = [(subject_from_run(run), run.target) for run in runs]
        for rule in self.config.rules:
            budget = self._budgets.get(rule.name)
            if budget is None:
                continue
            probability = budget.effective_probability(rule.sample)
            wanted = sum(
                1.0 if override_reason(rule, subject) is not None else probability
                for subject, target in subjects
                if target == rule.target and rule.where.matches_subject(subject)
            )
            if wanted:
                demand[rule.name] = wanted
        return demand

    def decide_subject(
        self, subject: FilterSubject, key: RunKey, *, rescore: bool = False, shed: str = ""
    ) -> list[Decision]:
        return [
            self._decide_rule(rule, subject, key, rescore, shed)
            for rule in self.config.rules
            if rule.target == key.target
        ]

    def record_spend(self, rule: str, usd: float = 0.0, *, tokens: int = 0) -> None:
        """Feed a rule's budget with judge cost, in whatever pieces it is reported (per scorer is fine).

        Both units may be given; the budget takes the one it is set in. Runs
        are counted by the engine itself when it samples them.
        """
        budget = self._budgets.get(rule)
        if budget is not None:
            budget.record_spend(self._in_budget_unit(rule, usd, tokens))

    def settle_run(self, rule: str, usd: float = 0.0, *, tokens: int = 0) -> None:
        """A sampled run's scorers for ``rule`` all ended, costing this much: its reservation is released."""
        budget = self._budgets.get(rule)
        if budget is not None:
            budget.settle(self._in_budget_unit(rule, usd, tokens))

    def budget_day_start(self) -> float | None:
        """Unix seconds of the budget day's start, or None when no rule has a budget."""
        return next((budget.day_start for budget in self._budgets.values()), None)

    def restore_spend(self, rule: str, usd: float, tokens: int, scored_runs: int) -> None:
        """Seed a rule's budget with today's spend from storage (after a restart); no-op without a budget."""
        budget = self._budgets.get(rule)
        if budget is not None:
            budget.restore(self._in_budget_unit(rule, usd, tokens), scored_runs)

    def in_budget_unit(self, rule: str, usd: float, tokens: int) -> float:
        """A spend in the unit of ``rule``'s budget (dollars or tokens)."""
        return self._in_budget_unit(rule, usd, tokens)

    def budget_rules(self) -> list[str]:
        return list(self._budgets)

    def use_leases(self) -> None:
        """Fleet mode: every daily budget spends only leases granted through Keeper (``grant``)."""
        self._leases = True
        for budget in self._budgets.values():
            budget.use_leases()

    def budget(self, rule: str) -> DailyBudget | None:
        """A rule's daily budget (the fleet member reads its headroom and grants it leases)."""
        return self._budgets.get(rule)

    def set_fleet_share(self, members: int, fleet_spent: Mapping[str, tuple[float, int]]) -> None:
        """Hold this replica's share of every cap: 1/``members`` of each rate, and of each budget's remainder.

        ``fleet_spent`` is today's (usd, tokens) per rule from the shared store; a rule missing there spent
        nothing yet.
        """
        self._fleet_share = (members, fleet_spent)
        for bucket in self._buckets.values():
            bucket.set_share(1.0 / members)
        for rule, budget in self._budgets.items():
            usd, tokens = fleet_spent.get(rule, (0.0, 0))
            budget.set_share(self._in_budget_unit(rule, usd, tokens), members)

    def learn_costs(self, fleet_spent: Mapping[str, tuple[float, int, int]]) -> None:
        """A fleet's stored (usd, tokens, scored runs) per rule today: what a run costs, for budgets yet to learn it."""
        for rule, (usd, tokens, runs) in fleet_spent.items():
            budget = self._budgets.get(rule)
            if budget is not None:
                budget.learn_cost(self._in_budget_unit(rule, usd, tokens), runs)

    def _in_budget_unit(self, rule: str, usd: float, tokens: int) -> float:
        """The spend in the unit the rule's budget is set in (dollars or tokens)."""
        settings = self.rules[rule].budget
        return usd if settings is not None and settings.unit == "usd" else float(tokens)

    def effective_probability(self, rule: str) -> float:
        """The rate a rule samples at right now (its configured rate unless its budget lowered it)."""
        configured = self.rules[rule].sample
        budget = self._budgets.get(rule)
        return configured if budget is None else budget.effective_probability(configured)

    def _decide_rule(
        self, rule: RuleConfig, subject: FilterSubject, key: RunKey, rescore: bool, shed: str = ""
    ) -> Decision:
        if not rule.where.matches_subject(subject):
            return _decision(rule, key, Outcome.FILTERED_OUT, 0.0, "did not match where")
        override = override_reason(rule, subject)
        budget = self._budgets.get(rule.name)
        probability = rule.sample
        if budget is not None:
            budget.note_candidate(forced=override is not None)
            if budget.exhausted:
                logger.debug("sampling budget spent rule=%s run_id=%s", rule.name, key.run_id)
                return _decision(rule, key, Outcome.OVER_BUDGET, 0.0, _spent_reason(budget))
            probability = budget.effective_probability(rule.sample)
        decision = draw(rule, key, probability, override)
        if override is None and probability < rule.sample:
            decision = replace(decision, reason=f"{decision.reason} (budget lowered the rate from {rule.sample:g})")
        if decision.outcome is not Outcome.SAMPLED:
            return decision
        if shed:
            return _decision(rule, key, Outcome.TOO_LARGE, 0.0, f"not scored: {shed}")
        return self._apply_caps(rule, key, decision, rescore)

    def _apply_caps(self, rule: RuleConfig, key: RunKey, decision: Decision, rescore: bool) -> Decision:
        memory_key = (rule.name, key.run_id)
        if memory_key in self._sampled and not rescore:
            self._sampled.move_to_end(memory_key)
            return _decision(rule, key, Outcome.DUPLICATE, decision.probability, "already sampled by this rule")
        bucket = self._buckets.get(rule.name)
        if bucket is not None and not bucket.try_take():
            logger.debug("sampling cap reached rule=%s run_id=%s", rule.name, key.run_id)
            return _decision(
                rule, key, Outcome.OVER_BUDGET, decision.probability, f"over max_per_minute={rule.max_per_minute}"
            )
        self._remember(memory_key)
        budget = self._budgets.get(rule.name)
        if budget is not None:
            budget.note_sampled()
        return decision

    def _remember(self, memory_key: tuple[str, str]) -> None:
        if self.config.remember_sampled == 0:
            return
        self._sampled[memory_key] = None
        while len(self._sampled) > self.config.remember_sampled:
            self._sampled.popitem(last=False)


def _spent_reason(budget: DailyBudget) -> str:
    """Why a budget refused a run: a fleet replica names what it leased, not only the fleet's whole limit."""
    if budget.leased is None:
        return f"daily budget of {budget.limit:g} spent"
    return (
        f"daily budget spent here: this replica's leases ({budget.leased:g}) of the fleet's {budget.configured_limit:g}"
        " are used or reserved by runs in flight"
    )


def _decision(rule: RuleConfig, key: RunKey, outcome: Outcome, probability: float, reason: str) -> Decision:
    return Decision(
        rule=rule.name,
        run_id=key.run_id,
        trace_id=key.trace_id,
        outcome=outcome,
        probability=probability,
        reason=reason,
    )
