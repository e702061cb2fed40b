"""Every string a span or log record carries is bounded, and log requests have a record limit."""

from __future__ import annotations

import pytest

from spanscore.collector.limits import LimitCounters, LimitsConfig, apply_limits, apply_log_limits
from spanscore.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from spanscore.server.wire import PayloadTooLargeError

LONG = "y" * 500
CONFIG = LimitsConfig(
    max_attribute_value_chars=100, max_resource_attribute_value_chars=80, max_name_chars=64, max_attributes_per_span=2
)


def _cut(longest: int, value: str = LONG) -> str:
    return value[:longest] + f"...[truncated by spanscore: {len(value) - longest} more characters]"


@pytest.mark.reliability("bad-input-clear-error")
def test_every_string_of_a_span_is_bounded() -> None:
    resource = {"service.name": "svc", "big": LONG, "third": "dropped"}
    span = SpanRecord(
        "01" * 16, "02" * 8, "", LONG, "Internal", 1, 2, "svc", {"a": LONG}, resource,
        "Error", LONG, LONG, LONG, LONG,
        (SpanEvent(1, LONG, {LONG: "v", "e": LONG}),),
        (SpanLink("03" * 16, "04" * 8, LONG, {"l": LONG}),),
    )  # fmt: skip
    counters = LimitCounters()
    (limited,) = apply_limits([span, span][:1], CONFIG, counters)
    assert limited.name == _cut(64)
    assert limited.attributes == {"a": _cut(100)}
    assert limited.resource_attributes == {"service.name": "svc", "big": _cut(80)}
    assert limited.service_name == "svc"
    assert limited.status_message == _cut(100)
    assert (limited.trace_state, limited.scope_name, limited.scope_version) == (_cut(64),) * 3
    assert limited.events == (SpanEvent(1, _cut(64), {_cut(64): "v", "e": _cut(100)}),)
    assert limited.links == (SpanLink("03" * 16, "04" * 8, _cut(64), {"l": _cut(100)}),)
    assert counters.dropped.attributes == 1
    assert counters.truncated_values == 12


@pytest.mark.reliability("no-request-stalls-others")
def test_a_shared_resource_is_limited_once_per_request() -> None:
    resource = {"service.name": "svc", "big": "r" * 4_000_000}
    spans = [SpanRecord("01" * 16, f"{i + 1:016x}", "", "s", "Internal", 1, 2, "svc", {}, resource) for i in range(250)]
    counters = LimitCounters()
    limited = apply_limits(spans, CONFIG, counters)
    assert {len(span.resource_attributes["big"]) for span in limited} == {len(_cut(80, "r" * 4_000_000))}
    assert len({id(span.resource_attributes) for span in limited}) == 1  # still one dict, not 250 copies
    assert counters.truncated_values == 1


@pytest.mark.reliability("bad-input-clear-error")
def test_every_string_of_a_log_record_is_bounded() -> None:
    record = LogRecord(
        1, "", "", LONG, LONG, 9, LONG, "svc", {"a": LONG, "b": "x", "c": "dropped"},
        {"service.name": "svc", "big": LONG}, LONG, LONG,
    )  # fmt: skip
    counters = LimitCounters()
    (limited,) = apply_log_limits([record], CONFIG, counters)
    assert (limited.event_name, limited.severity_text) == (_cut(64), _cut(64))
    assert limited.body == _cut(100)
    assert limited.attributes == {"a": _cut(100), "b": "x"}
    assert limited.resource_attributes == {"service.name": "svc", "big": _cut(80)}
    assert (limited.scope_name, limited.scope_version) == (_cut(64), _cut(64))
    assert counters.truncated_values == 7 and counters.dropped.attributes == 1


def test_too_many_log_records_refuse_the_request() -> None:
    config = LimitsConfig(max_log_records_per_request=2)
    records = [LogRecord(i, "", "", "", "", 9, "b") for i in range(3)]
    counters = LimitCounters()
    with pytest.raises(PayloadTooLargeError, match="3 log records; the limit is 2"):
        apply_log_limits(records, config, counters)
    assert counters.refused_log_requests == 1
    assert len(apply_log_limits(records[:2], config, counters)) == 2
