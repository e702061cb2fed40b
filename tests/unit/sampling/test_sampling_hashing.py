from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling_doubles import random_trace_ids

from spanscore.sampling.hashing import (
    MAX_THRESHOLD,
    TraceIdError,
    is_sampled,
    parse_ot_tracestate,
    probability_of,
    randomness_for,
    randomness_from_trace_id,
    threshold_for,
)

trace_ids = st.integers(min_value=1, max_value=(1 << 128) - 1).map(lambda value: f"{value:032x}")
probabilities = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
salts = st.one_of(st.none(), st.text(min_size=1, max_size=8))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("salt", [None, "rule-b"])
def test_rate_of_one_tenth_selects_ten_percent_of_twenty_thousand_ids(seed: int, salt: str | None) -> None:
    ids = random_trace_ids(20_000, seed)
    selected = sum(is_sampled(trace_id, 0.1, salt=salt) for trace_id in ids)
    assert abs(selected / len(ids) - 0.1) <= 0.01


def test_decisions_at_five_percent_are_a_subset_of_those_at_ten_percent() -> None:
    ids = random_trace_ids(20_000, seed=7)
    at_five = {trace_id for trace_id in ids if is_sampled(trace_id, 0.05)}
    at_ten = {trace_id for trace_id in ids if is_sampled(trace_id, 0.1)}
    assert at_five <= at_ten
    assert 0 < len(at_five) < len(at_ten)


@settings(max_examples=200, deadline=None)
@given(trace_id=trace_ids, first=probabilities, second=probabilities, salt=salts)
def test_sampling_nests_for_any_two_rates(trace_id: str, first: float, second: float, salt: str | None) -> None:
    low, high = sorted((first, second))
    if is_sampled(trace_id, low, salt=salt):
        assert is_sampled(trace_id, high, salt=salt)


@settings(max_examples=200, deadline=None)
@given(first=probabilities, second=probabilities)
def test_threshold_falls_as_probability_rises(first: float, second: float) -> None:
    low, high = sorted((first, second))
    assert threshold_for(low) >= threshold_for(high)
    assert abs(probability_of(threshold_for(low)) - low) <= 1 / MAX_THRESHOLD


def test_threshold_ends_and_middle() -> None:
    assert threshold_for(1.0) == 0
    assert threshold_for(0.0) == MAX_THRESHOLD
    assert threshold_for(0.5) == 1 << 55
    assert threshold_for(0.25) == 3 << 54


def test_low_56_bits_are_the_randomness_and_r_at_the_threshold_is_kept() -> None:
    # High 72 bits differ, low 56 bits equal: only the low bits count.
    assert randomness_from_trace_id("ffffffffffffffffff80000000000000") == 1 << 55
    assert randomness_from_trace_id("00000000000000000180000000000000") == 1 << 55
    assert is_sampled("00000000000000000180000000000000", 0.5)
    assert not is_sampled("0000000000000000017fffffffffffff", 0.5)


def test_probability_zero_keeps_nothing_and_one_keeps_everything() -> None:
    highest = "000000000000000000ffffffffffffff"
    lowest = "ffffffffffffffffff00000000000000"
    assert not is_sampled(highest, 0.0)
    assert is_sampled(lowest, 1.0)
    assert not is_sampled(lowest, 1e-9)


def test_explicit_rv_in_tracestate_replaces_trace_id_randomness() -> None:
    trace_id = "ffffffffffffffffff00000000000000"  # trace id randomness 0: kept only at p=1
    state = "vendor=abc,ot=th:0;rv:ffffffffffffff,other=x"
    assert randomness_for(trace_id, trace_state=state) == MAX_THRESHOLD - 1
    assert is_sampled(trace_id, 0.001, trace_state=state)
    assert not is_sampled(trace_id, 0.999)


@pytest.mark.parametrize("state", ["ot=rv:fff", "ot=rv:ffffffffffffffff", "ot=rv:gggggggggggggg", "ot=th:8", ""])
def test_missing_or_malformed_rv_falls_back_to_the_trace_id(state: str) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    assert randomness_for(trace_id, trace_state=state) == randomness_from_trace_id(trace_id)


def test_tracestate_threshold_is_padded_with_trailing_zeros() -> None:
    assert parse_ot_tracestate("ot=th:8").threshold == 1 << 55
    assert parse_ot_tracestate("ot=th:c").threshold == 3 << 54
    assert parse_ot_tracestate("ot=th:0").threshold == 0
    assert parse_ot_tracestate("ot=th:123456789abcdef").threshold is None  # 15 digits: too long
    assert parse_ot_tracestate("xy=th:8").threshold is None


def test_salt_changes_the_draw_but_stays_deterministic() -> None:
    ids = random_trace_ids(2_000, seed=11)
    plain = [is_sampled(trace_id, 0.5) for trace_id in ids]
    salted = [is_sampled(trace_id, 0.5, salt="s1") for trace_id in ids]
    assert salted == [is_sampled(trace_id, 0.5, salt="s1") for trace_id in ids]
    assert salted != plain
    assert salted != [is_sampled(trace_id, 0.5, salt="s2") for trace_id in ids]


def test_salt_ignores_rv() -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    with_rv = randomness_for(trace_id, salt="s", trace_state="ot=rv:00000000000000")
    assert with_rv == randomness_for(trace_id, salt="s")


def test_uppercase_trace_ids_decide_like_lowercase() -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    assert randomness_for(trace_id.upper(), salt="s") == randomness_for(trace_id, salt="s")
    assert randomness_from_trace_id(trace_id.upper()) == randomness_from_trace_id(trace_id)


@pytest.mark.parametrize(
    ("trace_id", "message"),
    [
        ("", "32 hexadecimal digits"),
        ("0af7651916cd43dd", "32 hexadecimal digits"),
        ("0af7651916cd43dd8448eb211c80319z", "32 hexadecimal digits"),
        ("0" * 32, "all zeros"),
    ],
)
def test_invalid_trace_ids_raise_a_clear_error(trace_id: str, message: str) -> None:
    with pytest.raises(TraceIdError, match=message):
        is_sampled(trace_id, 0.5)
    with pytest.raises(TraceIdError, match=message):
        randomness_for(trace_id, salt="s")
    with pytest.raises(TraceIdError, match=message):
        randomness_for(trace_id, trace_state="ot=rv:ffffffffffffff")


@pytest.mark.parametrize("probability", [-0.1, 1.5, float("nan")])
def test_probability_outside_zero_one_is_rejected(probability: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        threshold_for(probability)


def test_session_sampling_is_deterministic_nested_and_salted() -> None:
    from spanscore.sampling.hashing import session_randomness

    ids = [f"conversation-{index}" for index in range(2000)]
    first = [session_randomness(i) for i in ids]
    assert first == [session_randomness(i) for i in ids]  # every replica draws the same
    kept = sum(1 for r in first if r >= threshold_for(0.25))
    assert 400 < kept < 600
    salted = [session_randomness(i, salt="other") for i in ids]
    assert salted != first
    with pytest.raises(TraceIdError):
        session_randomness("")
