"""The flat view of a run that filters evaluate, built from a ``Run`` or from a stored row.

The live sampler holds ``Run`` objects; the preview and backfill paths hold
rows read back from ClickHouse. Both are turned into one ``FilterSubject`` here
and only then handed to the compiled filter, so the two paths cannot drift
apart: a filter never looks at a ``Run`` or a row directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spanscore.run import Run

FieldValue = str | float | bool | None

# Filter key -> Run attribute for the run-level string fields. An empty string
# counts as missing for these: stored rows cannot tell "" from absent.
RUN_STRING_FIELDS: Mapping[str, str] = {
    "service.name": "service_name",
    "agent.name": "agent_name",
    "model": "model",
    "provider": "provider",
    "session.id": "session_id",
    "user.id": "user_id",
    "trace_id": "trace_id",
    "run_id": "run_id",
}
RUN_FIELDS: frozenset[str] = frozenset({*RUN_STRING_FIELDS, "error", "duration_ms"})
"""Keys that name a run-level field rather than an attribute."""

FIELD_ALIASES: Mapping[str, str] = {
    "gen_ai.agent.name": "agent.name",
    "gen_ai.request.model": "model",
    "gen_ai.response.model": "model",
    "llm.model_name": "model",
    "gen_ai.provider.name": "provider",
    "gen_ai.system": "provider",
    "llm.provider": "provider",
    "gen_ai.conversation.id": "session.id",
    "enduser.id": "user.id",
}
"""Convention attribute names accepted for a run-level field. Every dialect's agent name, model,
provider, session and user land in the run's field, so ``gen_ai.agent.name: weather-agent`` matches an
OpenInference, OpenLLMetry, Vercel AI SDK or pydantic-ai run alike, not only runs whose root span
happens to carry that very attribute."""

# Stored-row spellings accepted for each run-level field: the Run attribute
# name first, then the otel_traces column where one exists.
_ROW_ALIASES: Mapping[str, tuple[str, ...]] = {
    "service.name": ("service_name", "ServiceName"),
    "agent.name": ("agent_name",),
    "model": ("model",),
    "provider": ("provider",),
    "session.id": ("session_id",),
    "user.id": ("user_id",),
    "trace_id": ("trace_id", "TraceId"),
    "run_id": ("run_id",),
}
_ERROR_STATUS = frozenset({"error", "status_code_error"})


@dataclass(frozen=True, slots=True)
class FilterSubject:
    """What a filter can see: run-level fields by filter key, plus span and resource attributes."""

    fields: Mapping[str, FieldValue]
    span_attributes: Mapping[str, str]
    resource_attributes: Mapping[str, str]


def subject_from_run(run: Run) -> FilterSubject:
    """A subject for a live run: ``Run.attributes`` are the root span's, ``Run.resource_attributes`` its resource's."""
    fields: dict[str, FieldValue] = {key: getattr(run, name) or None for key, name in RUN_STRING_FIELDS.items()}
    fields["error"] = run.error is not None
    fields["duration_ms"] = max(0, run.end_time_ns - run.start_time_ns) / 1e6
    return FilterSubject(fields=fields, span_attributes=run.attributes, resource_attributes=run.resource_attributes)


def subject_from_mapping(row: Mapping[str, Any]) -> FilterSubject:
    """A subject for a plain mapping, such as a row the backfill path reads from ClickHouse.

    Accepted keys: the ``Run`` field names (``service_name``, ``agent_name``,
    ``model``, ``provider``, ``session_id``, ``user_id``, ``trace_id``,
    ``run_id``, ``error``, ``start_time_ns``/``end_time_ns``, ``attributes``,
    ``resource_attributes``), plus ``duration_ms``/``duration_ns`` and
    ``span_attributes``, and the otel_traces columns ``ServiceName``,
    ``TraceId``, ``Duration`` (ns), ``StatusCode``, ``SpanAttributes`` and
    ``ResourceAttributes``. As on a ``Run``, ``attributes`` are the span's
    attributes; a map that is absent is empty.
    """
    fields: dict[str, FieldValue] = {key: _first_text(row, aliases) for key, aliases in _ROW_ALIASES.items()}
    fields["error"] = _row_error(row)
    fields["duration_ms"] = _row_duration_ms(row)
    span = _string_map(_first_present(row, ("attributes", "span_attributes", "SpanAttributes")))
    resource = _string_map(_first_present(row, ("resource_attributes", "ResourceAttributes")))
    return FilterSubject(fields=fields, span_attributes=span or {}, resource_attributes=resource or {})


def _first_present(row: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if row.get(key) is not None:
            return row[key]
    return None


def _first_text(row: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    value = _first_present(row, keys)
    return None if value is None or value == "" else str(value)


def _string_map(value: Any) -> Mapping[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"attributes must be a mapping, got {type(value).__name__}")
    return {str(key): str(item) for key, item in value.items()}


def _row_error(row: Mapping[str, Any]) -> bool:
    if "error" in row:
        value = row["error"]
        # A Run's error is a message (None = no error); rows may also carry a flag.
        return value if isinstance(value, bool) else value is not None
    status = _first_present(row, ("status_code", "StatusCode"))
    return status is not None and str(status).lower() in _ERROR_STATUS


def _row_duration_ms(row: Mapping[str, Any]) -> float | None:
    if row.get("duration_ms") is not None:
        return float(row["duration_ms"])
    nanoseconds = _first_present(row, ("duration_ns", "Duration"))
    if nanoseconds is not None:
        return max(0, int(nanoseconds)) / 1e6
    start, end = row.get("start_time_ns"), row.get("end_time_ns")
    if start is None or end is None:
        return None
    return max(0, int(end) - int(start)) / 1e6


def as_number(value: FieldValue) -> float | None:
    """The numeric reading of a field value; booleans and non-numeric text have none."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float | int):
        return float(value)
    try:
        number = float(value)
    except ValueError:
        return None
    return None if math.isnan(number) else number
