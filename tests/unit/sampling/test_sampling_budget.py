from __future__ import annotations

import pytest
from sampling_doubles import NOON, FakeClock

from spanscore.sampling.budget import SECONDS_PER_DAY, DailyBudget, TokenBucket


def test_token_bucket_allows_a_burst_then_refills_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(60, clock=clock)
    assert [bucket.try_take() for _ in range(61)] == [True] * 60 + [False]
    clock.advance(0.5)
    assert not bucket.try_take()
    clock.advance(0.5)
    assert bucket.try_take()
    assert not bucket.try_take()


def test_token_bucket_never_holds_more_than_a_minute() -> None:
    clock = FakeClock()
    bucket = TokenBucket(6, clock=clock)
    for _ in range(6):
        bucket.try_take()
    clock.advance(3600)
    assert bucket.available == pytest.approx(6)
    assert sum(bucket.try_take() for _ in range(10)) == 6


def test_token_bucket_ignores_a_clock_stepping_back() -> None:
    clock = FakeClock()
    bucket = TokenBucket(60, clock=clock)
    for _ in range(60):
        bucket.try_take()
    clock.advance(-30)
    assert not bucket.try_take()
    clock.advance(31)  # one second past where it was before the step back
    assert bucket.try_take()
    assert not bucket.try_take()


def test_token_bucket_rejects_a_non_positive_rate() -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenBucket(0)


def _busy_budget(
    clock: FakeClock, *, limit: float, candidates: int, seconds: float, scored: int, cost: float
) -> DailyBudget:
    budget = DailyBudget(limit, clock=clock)
    for _ in range(candidates):
        budget.note_candidate()
    for _ in range(scored):
        budget.note_sampled()
    clock.advance(seconds)
    budget.record_spend(cost * scored)
    return budget


def test_budget_keeps_the_configured_rate_until_there_is_spend_to_project_from() -> None:
    clock = FakeClock()
    budget = DailyBudget(10.0, clock=clock)
    for _ in range(10_000):
        budget.note_candidate()
    for _ in range(100):
        budget.note_sampled()
    assert budget.effective_probability(0.5) == 0.5


def test_budget_lowers_the_rate_so_the_projected_day_fits_what_is_left() -> None:
    clock = FakeClock()
    budget = _busy_budget(clock, limit=10.0, candidates=1_000, seconds=600, scored=50, cost=0.05)
    lowered = budget.effective_probability(0.5)
    assert 0 < lowered < 0.5
    # At the lowered rate, the rest of the day (same arrival rate, same cost per run) spends what is left.
    seconds_left = (NOON // SECONDS_PER_DAY + 1) * SECONDS_PER_DAY - clock.now
    projected = lowered * (1_000 / 600) * seconds_left * 0.05
    assert projected == pytest.approx(budget.remaining, rel=1e-9)
    assert budget.remaining == pytest.approx(10.0 - 2.5)


def test_budget_does_not_raise_the_rate_when_money_is_plentiful() -> None:
    clock = FakeClock()
    budget = _busy_budget(clock, limit=1_000_000.0, candidates=100, seconds=600, scored=10, cost=0.01)
    assert budget.effective_probability(0.2) == 0.2


def test_forced_candidates_are_paid_for_first() -> None:
    clock = FakeClock()
    plain = _busy_budget(clock, limit=10.0, candidates=1_000, seconds=600, scored=50, cost=0.05)
    other_clock = FakeClock()
    with_forced = DailyBudget(10.0, clock=other_clock)
    for index in range(1_000):
        with_forced.note_candidate(forced=index % 10 == 0)
    for _ in range(50):
        with_forced.note_sampled()
    other_clock.advance(600)
    with_forced.record_spend(2.5)
    assert with_forced.effective_probability(0.5) < plain.effective_probability(0.5)


def test_spent_budget_gives_probability_zero_until_midnight_resets_it() -> None:
    clock = FakeClock()
    budget = _busy_budget(clock, limit=1.0, candidates=100, seconds=60, scored=20, cost=0.06)
    assert budget.exhausted
    assert budget.effective_probability(0.3) == 0.0
    clock.advance(SECONDS_PER_DAY / 2)  # past midnight UTC
    assert not budget.exhausted
    assert budget.spent == 0.0
    assert budget.effective_probability(0.3) == 0.3


def test_budget_rejects_negative_spend() -> None:
    with pytest.raises(ValueError, match="negative"):
        DailyBudget(1.0).record_spend(-1.0)


def test_what_a_run_costs_is_not_forgotten_at_midnight() -> None:
    """Until a run's cost is known one run is in flight at a time, and a run refused is not asked again: with
    the cost forgotten at midnight, the day's first burst lost all its runs but one, every day."""
    clock = FakeClock()
    budget = DailyBudget(100.0, clock=clock)
    budget.note_sampled()
    budget.record_spend(2.0)
    budget.settle(2.0)
    clock.advance(SECONDS_PER_DAY / 2)  # past midnight UTC
    assert budget.remaining == 100.0 and budget.cost_per_run == 2.0
    budget.note_sampled()
    assert not budget.exhausted  # a second run may start while the first is in flight
    budget.record_spend(4.0)
    budget.settle(4.0)
    assert budget.cost_per_run == 4.0  # today's runs say what a run costs from here
