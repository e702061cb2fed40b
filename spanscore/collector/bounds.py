"""What one decoded span or log record may hold, checked while decoding, before its rows cost memory.

Three kinds of bound, each refusing or trimming before Python objects are built for what is dropped:

- **Counts.** Events and links per span, and attributes per event and per link, are capped as the
  OpenTelemetry SDK caps them (its span limits, 128 each by default). A span over a cap is kept with the
  first items in request order and the excess dropped and counted (``span_events_dropped``,
  ``span_links_dropped``, ``attributes_dropped``), as the SDK keeps a span and counts its dropped events:
  one noisy span loses detail, not the whole trace. Without the cap, one span of 1,000,000 empty events
  (a 2 MB body) grew the service by about 280 MB.
- **Value depth.** An attribute value (or log body) nested deeper than ``max_value_depth`` arrays and
  maps refuses its span or log record, with a partial-success message naming the key: a depth no
  instrumentation produces, and one the JSON text of the stored value would otherwise repeat in full.
- **Ids and times.** Ids must have their OTLP lengths (trace 16 bytes, span 8) in spans, parents, links
  and logs; times must lie between 1970-01-02 and the largest second storage's ``DateTime`` holds
  (2106-02-07 06:28:15 UTC: the logs' ``TimestampTime`` and the traces' sort key). Anything else was
  stored wrapped (a span at 2^64-1 ns became 1969) or dead-lettered downstream; it is refused here, with
  the field named.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from spanscore.collector.limits_config import LimitsConfig

MIN_TIME_NS = 86_400 * 10**9
"""1970-01-02T00:00:00Z: earlier times are unset or wrong clocks, and sit outside every retention window."""
MAX_TIME_NS = (2**32 - 1) * 10**9
"""2106-02-07T06:28:15Z: the largest ``DateTime`` (seconds in a UInt32), which logs and the traces' sort key use."""

_SHOWN_TIME_RANGE = "1970-01-02T00:00:00Z to 2106-02-07T06:28:15Z"


class Refused(Exception):
    """One span or log record cannot be stored; the message names the field and what is wrong."""


@dataclass(slots=True)
class Drops:
    """What the count caps dropped: counted per decode (``DecodeBounds``), summed per service (``LimitCounters``).

    One type for both, so a new kind of drop is counted, saved, undone and summed in one place.
    """

    events: int = 0
    links: int = 0
    attributes: int = 0

    def add(self, other: Drops) -> None:
        self.events += other.events
        self.links += other.links
        self.attributes += other.attributes


@dataclass(slots=True)
class DecodeBounds:
    """The caps of one decode, read from the configured ``LimitsConfig``, and what they dropped."""

    caps: LimitsConfig = field(default_factory=LimitsConfig)
    dropped: Drops = field(default_factory=Drops)

    def drops(self) -> Drops:
        """The drop counters now, to put back with ``undo_drops`` when the span they were counted for is refused."""
        return replace(self.dropped)

    def undo_drops(self, saved: Drops) -> None:
        self.dropped = saved

    def head(self, items: Any, limit: int) -> Any:
        """The first ``limit`` items of a repeated protobuf field; building wrappers only for those."""
        return items if len(items) <= limit else items[:limit]


def time_problem(field: str, value: int) -> str:
    """Why ``value`` (Unix nanoseconds) cannot be stored in ``field``, or "" when it can."""
    if MIN_TIME_NS <= value <= MAX_TIME_NS:
        return ""
    return f"{field} is {value} ns ({_shown(value)}), outside the storable range {_SHOWN_TIME_RANGE}"


def _shown(value: int) -> str:
    try:
        return datetime.fromtimestamp(value / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return "past any calendar date"


def id_problem(field: str, value: bytes, size: int, *, optional: bool = False) -> str:
    """Why ``value`` is not an OTLP id of ``size`` bytes (non-zero), or "" when it is."""
    if optional and not value:
        return ""
    if len(value) != size:
        return f"{field} must be {size} bytes, got {len(value)}"
    if value == bytes(size):
        return f"{field} must not be all zero"
    return ""


def span_problem(span: Any) -> str:
    """The first thing that makes a protobuf span unstorable (ids, times, link ids, event times), or ""."""
    problem = (
        id_problem("trace_id", span.trace_id, 16)
        or id_problem("span_id", span.span_id, 8)
        or id_problem("parent_span_id", span.parent_span_id, 8, optional=True)
        or time_problem("start_time_unix_nano", span.start_time_unix_nano)
        or time_problem("end_time_unix_nano", span.end_time_unix_nano)
    )
    if problem:
        return problem
    for index, link in enumerate(span.links):
        problem = id_problem(f"links[{index}].trace_id", link.trace_id, 16) or id_problem(
            f"links[{index}].span_id", link.span_id, 8
        )
        if problem:
            return problem
    for index, event in enumerate(span.events):
        problem = time_problem(f"events[{index}].time_unix_nano", event.time_unix_nano)
        if problem:
            return problem
    return ""


def log_problem(record: Any) -> str:
    """The first thing that makes a protobuf log record unstorable (ids, time), or ""."""
    time_field = "time_unix_nano" if record.time_unix_nano else "observed_time_unix_nano"
    return (
        id_problem("trace_id", record.trace_id, 16, optional=True)
        or id_problem("span_id", record.span_id, 8, optional=True)
        or time_problem(time_field, record.time_unix_nano or record.observed_time_unix_nano)
    )
