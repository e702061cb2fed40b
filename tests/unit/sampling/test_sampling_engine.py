from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling_doubles import FakeClock, random_trace_ids

from spanscore.run import Run
from spanscore.sampling.decisions import Outcome
from spanscore.sampling.engine import RuleEngine, Sampler, preview_mapping, preview_run
from spanscore.sampling.rules import RuleConfig, SamplingConfig, load_sampling_config


def _config(*rules: dict[str, Any], remember_sampled: int = 100_000) -> SamplingConfig:
    completed = [{"scorers": ["faithfulness"], **rule} for rule in rules]
    return load_sampling_config({"rules": completed, "remember_sampled": remember_sampled})


UNCAPPED = _config(
    {"name": "support", "where": {"service.name": "support-bot"}, "sample": 0.1},
    {"name": "support-wide", "where": {"service.name": "support-bot"}, "sample": 0.3},
    {"name": "slow", "where": {"duration_ms": {"gte": 2000}}, "sample": 0.5, "always": {"errors": True}},
    {"name": "salted", "sample": 0.2, "salt": "pilot"},
    {"name": "gold", "where": {"tier": "gold"}, "sample": 0.0, "always": {"where": {"http.status": {"regex": "^5"}}}},
)


def _runs(count: int, seed: int) -> list[Run]:
    runs = []
    for index, trace_id in enumerate(random_trace_ids(count, seed)):
        runs.append(
            Run(
                trace_id=trace_id,
                span_id=trace_id[:16],
                service_name="support-bot" if index % 3 else "billing",
                error="boom" if index % 7 == 0 else None,
                start_time_ns=0,
                end_time_ns=(index % 5) * 1_000_000_000,
                attributes={"tier": "gold" if index % 2 else "silver", "http.status": "503" if index % 4 else "200"},
            )
        )
    return runs


def _outcomes(engine: RuleEngine, runs: list[Run]) -> list[tuple[str, str, Outcome, float]]:
    return [(d.rule, d.run_id, d.outcome, d.probability) for run in runs for d in engine.decide(run)]


def test_two_engines_given_the_same_traces_decide_the_same() -> None:
    config = _config(
        {"name": "capped", "sample": 0.5, "max_per_minute": 20},
        {"name": "support", "where": {"service.name": "support-bot"}, "sample": 0.1},
    )
    runs = _runs(500, seed=3)
    first = _outcomes(RuleEngine(config, clock=FakeClock()), runs)
    second = _outcomes(RuleEngine(config, clock=FakeClock()), runs)
    assert first == second
    assert {outcome for _, _, outcome, _ in first} == {
        Outcome.SAMPLED,
        Outcome.SAMPLED_OUT,
        Outcome.OVER_BUDGET,
        Outcome.FILTERED_OUT,
    }


def test_every_rule_answers_for_every_run() -> None:
    runs = _runs(50, seed=4)
    decisions = [engine_decision for run in runs for engine_decision in RuleEngine(UNCAPPED).decide(run)]
    assert len(decisions) == len(runs) * len(UNCAPPED.rules)


def test_rules_with_the_same_randomness_nest() -> None:
    engine = RuleEngine(UNCAPPED)
    narrow, wide = set(), set()
    for run in _runs(5_000, seed=5):
        by_rule = {d.rule: d for d in engine.decide(run)}
        if by_rule["support"].sampled:
            narrow.add(run.run_id)
        if by_rule["support-wide"].sampled:
            wide.add(run.run_id)
    assert narrow and narrow < wide


def test_live_decisions_match_preview_for_runs_and_stored_rows() -> None:
    engine = RuleEngine(UNCAPPED, clock=FakeClock())
    for run in _runs(2_000, seed=6):
        row = {
            "TraceId": run.trace_id,
            "SpanId": run.span_id,
            "ServiceName": run.service_name,
            "StatusCode": "Error" if run.error is not None else "Ok",
            "Duration": run.end_time_ns - run.start_time_ns,
            "SpanAttributes": dict(run.attributes),
        }
        live = engine.decide(run)
        assert live == preview_run(UNCAPPED.rules, run)
        assert live == preview_mapping(UNCAPPED.rules, row)


@settings(max_examples=150, deadline=None)
@given(
    trace_id=st.integers(1, (1 << 128) - 1).map(lambda value: f"{value:032x}"),
    service=st.sampled_from(["support-bot", "billing", None]),
    errored=st.booleans(),
    duration_ms=st.integers(0, 5_000),
    tier=st.sampled_from(["gold", "silver"]),
    status=st.sampled_from(["200", "503"]),
)
def test_live_and_preview_agree_for_any_run(
    trace_id: str, service: str | None, errored: bool, duration_ms: int, tier: str, status: str
) -> None:
    run = Run(
        trace_id=trace_id,
        service_name=service,
        error="boom" if errored else None,
        end_time_ns=duration_ms * 1_000_000,
        attributes={"tier": tier, "http.status": status},
    )
    assert RuleEngine(UNCAPPED).decide(run) == preview_run(UNCAPPED.rules, run)


def test_the_roots_tracestate_randomness_decides_live_and_in_preview() -> None:
    # Trace ids whose low 56 bits say "keep" at 50%, and rv values that say the opposite: the
    # decision must follow rv (OpenTelemetry consistent probability), wherever the run comes from.
    config = _config({"name": "half", "sample": 0.5}, {"name": "salted", "sample": 0.5, "salt": "pilot"})
    kept_by_id = [trace_id for trace_id in random_trace_ids(400, seed=18) if int(trace_id[-14:], 16) >= 1 << 55]
    engine = RuleEngine(config)
    for index, trace_id in enumerate(kept_by_id[:100]):
        rv = "00000000000000" if index % 2 else "80000000000000"
        run = Run(trace_id=trace_id, span_id=trace_id[:16], trace_state=f"congo=t61rcWkgMzE,ot=th:0;rv:{rv}")
        row = {"TraceId": trace_id, "SpanId": trace_id[:16], "TraceState": run.trace_state}
        live = engine.decide(run)
        assert live == preview_run(config.rules, run) == preview_mapping(config.rules, row)
        assert live[0].outcome is (Outcome.SAMPLED_OUT if index % 2 else Outcome.SAMPLED)
        # A salted rule draws from its own hash and ignores rv.
        assert live[1] == preview_run(config.rules, Run(trace_id=trace_id, span_id=trace_id[:16]))[1]


def test_filtered_out_runs_are_recorded_with_probability_zero() -> None:
    run = Run(trace_id="0af7651916cd43dd8448eb211c80319c", service_name="billing")
    decision = RuleEngine(UNCAPPED).decide(run)[0]
    assert (decision.outcome, decision.probability) == (Outcome.FILTERED_OUT, 0.0)


def test_overrides_score_errors_and_matches_at_probability_one() -> None:
    config = _config(
        {"name": "errors", "sample": 0.0, "always": {"errors": True}},
        {"name": "slow", "sample": 0.0, "always": {"where": {"duration_ms": {"gt": 1000}}}},
    )
    engine = RuleEngine(config)
    errored = Run(trace_id="0af7651916cd43dd8448eb211c80319c", error="TimeoutError")
    slow = Run(trace_id="1af7651916cd43dd8448eb211c80319c", end_time_ns=2_000_000_000)
    plain = Run(trace_id="2af7651916cd43dd8448eb211c80319c")
    assert [(d.outcome, d.probability) for d in engine.decide(errored)] == [
        (Outcome.SAMPLED, 1.0),
        (Outcome.SAMPLED_OUT, 0.0),
    ]
    assert [d.outcome for d in engine.decide(slow)] == [Outcome.SAMPLED_OUT, Outcome.SAMPLED]
    assert [d.outcome for d in engine.decide(plain)] == [Outcome.SAMPLED_OUT, Outcome.SAMPLED_OUT]
    assert "error" in engine.decide(Run(trace_id="3af7651916cd43dd8448eb211c80319c", error=""))[0].reason


def test_token_bucket_rejections_are_recorded_as_over_budget() -> None:
    clock = FakeClock()
    engine = RuleEngine(_config({"name": "capped", "sample": 1.0, "max_per_minute": 5}), clock=clock)
    runs = _runs(12, seed=8)
    outcomes = [engine.decide(run)[0] for run in runs[:10]]
    assert [d.outcome for d in outcomes] == [Outcome.SAMPLED] * 5 + [Outcome.OVER_BUDGET] * 5
    assert all(d.probability == 1.0 and "max_per_minute=5" in d.reason for d in outcomes[5:])
    clock.advance(12)  # one token back at 5 a minute
    assert [engine.decide(run)[0].outcome for run in runs[10:]] == [Outcome.SAMPLED, Outcome.OVER_BUDGET]


def test_a_run_seen_again_is_a_duplicate_and_takes_no_token() -> None:
    engine = RuleEngine(_config({"name": "capped", "sample": 1.0, "max_per_minute": 2}), clock=FakeClock())
    first, second = _runs(2, seed=9)
    assert engine.decide(first)[0].outcome is Outcome.SAMPLED
    assert engine.decide(first)[0].outcome is Outcome.DUPLICATE
    assert engine.decide(second)[0].outcome is Outcome.SAMPLED
    # A deliberate rescore is let through, but the bucket (two a minute, both taken) still applies.
    assert engine.decide(first, rescore=True)[0].outcome is Outcome.OVER_BUDGET


def test_a_rescore_after_a_late_span_is_sampled_again() -> None:
    engine = RuleEngine(_config({"name": "all", "sample": 1.0}))
    run = _runs(1, seed=16)[0]
    assert engine.decide(run)[0].outcome is Outcome.SAMPLED
    assert engine.decide(run, rescore=True)[0].outcome is Outcome.SAMPLED
    assert engine.decide(run)[0].outcome is Outcome.DUPLICATE


def test_duplicate_memory_is_bounded() -> None:
    engine = RuleEngine(_config({"name": "all", "sample": 1.0}, remember_sampled=2))
    first, second, third = _runs(3, seed=10)
    for run in (first, second, third):
        engine.decide(run)
    assert engine.decide(third)[0].outcome is Outcome.DUPLICATE
    assert engine.decide(first)[0].outcome is Outcome.SAMPLED  # forgotten: oldest of three


def test_a_run_without_a_usable_trace_id_is_recorded_as_failed() -> None:
    decision = RuleEngine(_config({"name": "all", "sample": 0.5})).decide(Run("question", "answer"))[0]
    assert decision.outcome is Outcome.FAILED
    assert "32 hexadecimal digits" in decision.reason


def test_budget_lowers_the_stored_probability_and_keeps_decisions_nested() -> None:
    clock = FakeClock()
    config = _config({"name": "judged", "sample": 0.5, "budget": {"daily_usd": 5.0}})
    engine = RuleEngine(config, clock=clock)
    warmup, later = _runs(1_000, seed=11), _runs(4_000, seed=12)
    for run in warmup:
        if engine.decide(run)[0].sampled:
            engine.settle_run("judged", 0.002)  # each run's calls end before the next arrives
    clock.advance(600)
    sampled_so_far = sum(d.sampled for run in warmup for d in preview_run(config.rules, run))
    for _ in range(2):  # spend arrives per scorer, in pieces
        engine.record_spend("judged", 0.001 * sampled_so_far, tokens=10**9)
    lowered = engine.effective_probability("judged")
    # The engine counted the sampled runs itself: cost per run is 0.002, the day's remainder must fit in 5 - spent.
    seconds_left = 12 * 3600 - 600
    expected_rate = (5.0 - 0.002 * sampled_so_far) / 0.002 / (len(warmup) / 600 * seconds_left)
    assert 0.0 < expected_rate < 0.5
    assert lowered == pytest.approx(expected_rate, rel=1e-9)
    assert 0.0 < lowered < 0.5

    decisions = []
    for run in later:
        decisions.append(engine.decide(run)[0])
        if decisions[-1].sampled:
            engine.settle_run("judged", 0.002)
    sampled = {d.run_id for d in decisions if d.sampled}
    unlowered = {d.run_id for d in preview_decisions_at_configured_rate(config, later) if d.sampled}
    assert sampled < unlowered
    assert all(d.probability < 0.5 for d in decisions)
    assert any("budget lowered the rate from 0.5" in d.reason for d in decisions)
    assert abs(len(sampled) / len(later) - decisions[0].probability) < 0.02


def preview_decisions_at_configured_rate(config: SamplingConfig, runs: list[Run]) -> list[Any]:
    return [preview_run(config.rules, run)[0] for run in runs]


def test_spent_budget_is_over_budget_for_everyone_until_midnight() -> None:
    clock = FakeClock()
    engine = RuleEngine(_config({"name": "judged", "sample": 1.0, "budget": {"daily_tokens": 1000}}), clock=clock)
    first, second = _runs(2, seed=13)
    assert engine.decide(first)[0].outcome is Outcome.SAMPLED
    engine.record_spend("judged", 5.0)  # dollars do not count against a token budget
    engine.settle_run("judged", 5.0)
    assert engine.decide(second)[0].outcome is Outcome.SAMPLED
    engine.record_spend("judged", tokens=1000)
    engine.settle_run("judged", tokens=1000)
    decision = engine.decide(_runs(3, seed=14)[2])[0]
    assert (decision.outcome, decision.probability) == (Outcome.OVER_BUDGET, 0.0)
    assert "daily budget of 1000 spent" in decision.reason
    clock.advance(12 * 3600)
    assert engine.decide(_runs(4, seed=15)[3])[0].outcome is Outcome.SAMPLED


def test_runs_in_flight_reserve_their_cost_so_the_budget_is_never_overspent() -> None:
    clock = FakeClock()
    clock.advance((clock() // 86_400 + 1) * 86_400 - clock() - 100)  # late in the day: pacing keeps rate 1
    engine = RuleEngine(_config({"name": "judged", "sample": 1.0, "budget": {"daily_tokens": 1000}}), clock=clock)
    runs = iter(_runs(200, seed=21))
    scored = 0
    for _ in range(40):  # bursts of 5 runs decided before any of their judge calls end (300 tokens each)
        sampled = sum(engine.decide(next(runs))[0].sampled for _ in range(5))
        for _ in range(sampled):
            engine.record_spend("judged", tokens=300)
            engine.settle_run("judged", tokens=300)
        scored += sampled
        clock.advance(1)
    assert scored == 3  # all the limit affords, and not one run more
    assert engine._budgets["judged"].spent == 900


def test_engine_satisfies_the_sampler_seam_and_configs_compare_by_content() -> None:
    sampler: Sampler = RuleEngine(UNCAPPED)
    assert sampler.decide(Run(trace_id="0af7651916cd43dd8448eb211c80319c"))
    assert _config({"name": "a", "where": {"x": 1}}) == _config({"name": "a", "where": {"x": 1}})
    assert _config({"name": "a", "where": {"x": 1}}) != _config({"name": "a", "where": {"x": 2}})


def test_the_stored_probability_is_the_configured_one() -> None:
    engine = RuleEngine(_config({"name": "one-percent", "sample": 0.01}))
    decisions = [engine.decide(run)[0] for run in _runs(200, seed=17)]
    assert {d.probability for d in decisions} == {0.01}
    assert {d.outcome for d in decisions} == {Outcome.SAMPLED, Outcome.SAMPLED_OUT}


def test_two_replicas_agree_on_sessions_and_span_targets() -> None:
    """Sessions are drawn from the session id, span targets from their trace: replicas need not talk."""
    rules = [
        RuleConfig.model_validate({"name": "convo", "target": "session", "sample": 0.3, "scorers": ["turn_count"]}),
        RuleConfig.model_validate({"name": "calls", "target": "llm", "sample": 0.3, "scorers": ["completeness"]}),
        RuleConfig.model_validate({"name": "runs", "sample": 0.3, "scorers": ["completeness"]}),
    ]
    first, second = (RuleEngine(SamplingConfig(rules=rules)) for _ in range(2))
    subjects = [
        Run(run_id=f"user-{index}-conversation", trace_id=f"{index + 1:032x}", target="session")
        for index in range(1000)
    ] + [Run(run_id=f"{index:016x}", trace_id=f"{index * 7919 + 1:032x}", target="llm") for index in range(1000)]
    decided = [first.decide(subject) for subject in subjects]
    assert decided == [second.decide(subject) for subject in subjects]
    # only the rules of a subject's target decide on it
    assert {d.rule for ds in decided[:1000] for d in ds} == {"convo"}
    assert {d.rule for ds in decided[1000:] for d in ds} == {"calls"}
    sampled = sum(1 for ds in decided[:1000] if ds[0].sampled)
    assert 240 < sampled < 360


def test_budget_demand_counts_the_runs_each_budgeted_rule_would_likely_sample() -> None:
    """A fleet replica leases for a burst by this: overrides count whole, the rest at the rule's rate."""
    config = _config(
        {"name": "errors", "sample": 0.5, "always": {"errors": True}, "budget": {"daily_usd": 5}},
        {"name": "billing", "sample": 1.0, "where": {"service.name": "billing"}, "budget": {"daily_tokens": 10}},
        {"name": "free", "sample": 1.0},
    )
    engine = RuleEngine(config, clock=FakeClock())
    runs = _runs(21, seed=3)
    errors = sum(1 for run in runs if run.error)
    billing = sum(1 for run in runs if run.service_name == "billing")
    demand = engine.budget_demand(runs)
    assert demand == {"errors": pytest.approx(errors + 0.5 * (len(runs) - errors)), "billing": billing}
    assert engine.budget_demand([]) == {}


def test_a_leased_budget_says_what_this_replica_leased_of_the_fleets_limit() -> None:
    engine = RuleEngine(_config({"name": "judged", "sample": 1.0, "budget": {"daily_tokens": 1000}}), clock=FakeClock())
    engine.use_leases()
    budget = engine.budget("judged")
    assert budget is not None
    budget.grant(150, budget.day)
    first, second = _runs(2, seed=21)
    assert engine.decide(first)[0].outcome is Outcome.SAMPLED
    engine.record_spend("judged", tokens=150)
    engine.settle_run("judged", tokens=150)
    decision = engine.decide(second)[0]
    assert decision.outcome is Outcome.OVER_BUDGET
    assert decision.reason.startswith("daily budget spent here: this replica's leases (150) of the fleet's 1000")


def test_a_fleet_replica_learns_a_runs_cost_from_the_fleets_stored_spend() -> None:
    """Until a run's cost is known one run is in flight at a time; a replica that joins mid-day need not wait."""
    engine = RuleEngine(_config({"name": "judged", "sample": 1.0, "budget": {"daily_tokens": 1000}}), clock=FakeClock())
    engine.use_leases()
    budget = engine.budget("judged")
    assert budget is not None
    budget.grant(500, budget.day)
    runs = _runs(3, seed=31)
    assert engine.decide(runs[0])[0].outcome is Outcome.SAMPLED
    assert engine.decide(runs[1])[0].outcome is Outcome.OVER_BUDGET  # the first run's cost is not known yet
    engine.learn_costs({"judged": (0.0, 700, 10), "other": (1.0, 5, 1)})  # the fleet scored 10 runs for 700 tokens
    assert budget.cost_per_run == 70
    assert engine.decide(runs[2])[0].outcome is Outcome.SAMPLED
    engine.learn_costs({"judged": (0.0, 9000, 10)})  # learnt once: the replica's own runs refine it from here
    assert budget.cost_per_run == 70


def test_a_shed_run_is_drawn_but_takes_no_token_budget_or_memory() -> None:
    """Runs shed while scoring is behind are not scored: they must not use up what the scored runs are capped by."""
    clock = FakeClock()
    config = _config(
        {"name": "capped", "sample": 1.0, "max_per_minute": 1},
        {"name": "half", "sample": 0.5},
        {"name": "billing", "where": {"service.name": "billing"}},
    )
    engine = RuleEngine(config, clock=clock)
    runs = _runs(40, seed=12)
    shed = [engine.decide(run, shed="scoring was behind") for run in runs]
    by_rule = {
        rule: [decisions[index] for decisions in shed] for index, rule in enumerate(["capped", "half", "billing"])
    }
    assert all(
        d.outcome is Outcome.TOO_LARGE and d.reason == "not scored: scoring was behind" for d in by_rule["capped"]
    )
    assert {d.outcome for d in by_rule["half"]} == {Outcome.TOO_LARGE, Outcome.SAMPLED_OUT}
    for run, decision in zip(runs, by_rule["half"], strict=True):  # the draw, as a preview (stateless) makes it
        expected = preview_run(config.rules, run)[1].outcome
        assert decision.outcome is (Outcome.TOO_LARGE if expected is Outcome.SAMPLED else expected)
    assert {d.outcome for d in by_rule["billing"]} == {Outcome.TOO_LARGE, Outcome.FILTERED_OUT}
    # The cap's one token, and the duplicate memory, are still there for the runs that are scored.
    assert engine.decide(runs[0])[0].outcome is Outcome.SAMPLED
    assert engine.decide(runs[1])[0].outcome is Outcome.OVER_BUDGET
