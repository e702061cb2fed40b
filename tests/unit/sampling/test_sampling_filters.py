from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.records import SpanRecord
from spanscore.run import Run
from spanscore.runs.assembly import runs_from_spans
from spanscore.sampling.filters import MATCH_ALL, FilterError, parse_filter

# "region" may be set on both the span and the resource, with different values.
SPAN_KEYS = ["gen_ai.agent.name", "http.status", "tier", "flag", "region"]
RESOURCE_KEYS = ["service.name", "service.version", "deployment.environment", "region"]
TEXT_VALUES = ["triage", "answer", "200", "500", "1.5", "true", "false", "prod", ""]
SCALARS = st.one_of(
    st.sampled_from(TEXT_VALUES),
    st.sampled_from([200, 500, 1.5, 0, -3]),
    st.booleans(),
)
FILTER_KEYS = [
    "service.name",
    "agent.name",
    "model",
    "provider",
    "session.id",
    "user.id",
    "duration_ms",
    "error",
    *SPAN_KEYS,
    *RESOURCE_KEYS,
    *(f"{prefix}.{key}" for prefix in ("span", "resource") for key in {*SPAN_KEYS, *RESOURCE_KEYS}),
    "not.there",
]

ROOT = Run(
    "hello",
    "hi",
    trace_id="0af7651916cd43dd8448eb211c80319c",
    service_name="support-bot",
    agent_name="triage",
    model="gpt-4o-mini",
    error="TimeoutError",
    start_time_ns=1_000_000_000,
    end_time_ns=3_500_000_000,
    attributes={"gen_ai.agent.name": "triage", "http.status": "503", "tier": "gold", "region": "eu-west-1"},
    resource_attributes={"deployment.environment": "prod", "service.name": "support-bot", "region": "eu"},
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"service.name": "support-bot"}, True),
        ({"service.name": "other"}, False),
        ({"service.name": "support-bot", "gen_ai.agent.name": ["triage", "answer"]}, True),
        ({"gen_ai.agent.name": ["answer", "plan"]}, False),
        ({"agent.name": {"regex": "^tri"}}, True),
        ({"agent.name": {"regex": "^age"}}, False),
        ({"model": {"contains": "4o"}}, True),
        ({"http.status": 503}, True),
        ({"http.status": {"gte": 500, "lt": 600}}, True),
        ({"http.status": {"lt": 500}}, False),
        ({"duration_ms": {"gt": 2000}}, True),
        ({"duration_ms": {"gt": 2500}}, False),
        ({"duration_ms": 2500}, True),
        ({"error": True}, True),
        ({"error": False}, False),
        ({"not": {"error": True}}, False),
        ({"provider": {"exists": False}}, True),
        ({"provider": {"exists": True}}, False),
        ({"provider": {"ne": "openai"}}, True),
        ({"tier": {"not": ["gold", "silver"]}}, False),
        ({"tier": {"in": ["gold", "silver"]}}, True),
        ({"any": [{"model": "claude"}, {"tier": "gold"}]}, True),
        ({"all": [{"model": "claude"}, {"tier": "gold"}]}, False),
        ({"resource.deployment.environment": "prod"}, True),
        ({"deployment.environment": "prod"}, True),
        ({"span.deployment.environment": {"exists": True}}, False),
        ({"span.tier": "gold"}, True),
        ({"resource.tier": {"exists": False}}, True),
        ({"span.region": "eu-west-1", "resource.region": "eu"}, True),
        ({"region": "eu-west-1"}, True),
        ({"resource.region": "eu-west-1"}, False),
        ({"span.nothing": {"exists": True}}, False),
        ({"http.status": {"regex": "^5"}, "not": {"any": [{"tier": "bronze"}]}}, True),
        ({}, True),
    ],
)
def test_filter_examples(raw: dict[str, Any], expected: bool) -> None:
    assert parse_filter(raw).matches(ROOT) is expected


def test_no_filter_matches_everything() -> None:
    assert parse_filter(None) is MATCH_ALL
    assert MATCH_ALL.matches(Run())


def test_run_fields_win_over_attributes_and_missing_fields_fall_through() -> None:
    run = Run(service_name="from-run", resource_attributes={"service.name": "from-resource"})
    assert parse_filter({"service.name": "from-run"}).matches(run)
    fallback = Run(resource_attributes={"service.name": "from-resource"})
    assert parse_filter({"service.name": "from-resource"}).matches(fallback)


def test_prefixes_read_only_their_own_map_and_bare_keys_prefer_the_span() -> None:
    run = Run(
        attributes={"team": "span-team", "only.span": "1"}, resource_attributes={"team": "res-team", "only.res": "1"}
    )
    assert parse_filter({"span.team": "span-team", "resource.team": "res-team", "team": "span-team"}).matches(run)
    for wrong in ({"span.team": "res-team"}, {"resource.team": "span-team"}, {"team": "res-team"}):
        assert not parse_filter(wrong).matches(run), wrong
    assert parse_filter({"span.only.res": {"exists": False}, "resource.only.span": {"exists": False}}).matches(run)
    assert parse_filter({"only.res": 1, "only.span": 1}).matches(run)


def test_assembled_runs_keep_span_and_resource_attributes_apart() -> None:
    root = SpanRecord(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_span_id="",
        name="invoke_agent triage",
        kind="Internal",
        start_time_ns=0,
        end_time_ns=10,
        service_name="support-bot",
        attributes={"gen_ai.operation.name": "invoke_agent", "env": "from-span"},
        resource_attributes={"service.name": "support-bot", "env": "from-resource"},
    )
    (run,) = runs_from_spans([root])
    row = {"TraceId": root.trace_id, "SpanAttributes": root.attributes, "ResourceAttributes": root.resource_attributes}
    for raw, expected in (({"resource.env": "from-resource"}, True), ({"span.env": "from-resource"}, False)):
        assert parse_filter(raw).matches(run) is expected
        assert parse_filter(raw).matches_mapping(row) is expected


def test_text_and_boolean_equality_across_stored_forms() -> None:
    run = Run(attributes={"flag": "TRUE", "count": "7"})
    assert parse_filter({"flag": True}).matches(run)
    assert parse_filter({"count": 7}).matches(run)
    assert parse_filter({"count": "7"}).matches(run)
    assert not parse_filter({"count": 8}).matches(run)
    assert parse_filter({"error": False}).matches(run)
    assert parse_filter({"duration_ms": "0"}).matches(run)


def test_numeric_operators_ignore_values_that_are_not_numbers() -> None:
    run = Run(attributes={"tier": "gold"})
    assert not parse_filter({"tier": {"gt": 0}}).matches(run)
    assert not parse_filter({"tier": {"lte": 0}}).matches(run)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"latency": {"gtt": 5}}, "rules[0].where.latency: unknown operator 'gtt'"),
        ({"x": {"regex": "("}}, "rules[0].where.x.regex: invalid regular expression '('"),
        ({"x": {"gt": "ten"}}, "rules[0].where.x.gt: expected a number, got 'ten'"),
        ({"x": {"gt": True}}, "rules[0].where.x.gt: expected a number, got True"),
        ({"x": {"exists": "yes"}}, "rules[0].where.x.exists: expected true or false"),
        ({"x": {"in": "a"}}, "rules[0].where.x.in: expected a list of values"),
        ({"x": []}, "rules[0].where.x: an empty list matches nothing"),
        ({"x": None}, "rules[0].where.x: a bare null is ambiguous"),
        ({"x": {}}, "rules[0].where.x: no operator given"),
        ({"x": [{"a": 1}]}, "rules[0].where.x[0]: expected a string, number or boolean"),
        ({"error": "yes"}, "rules[0].where.error: error is true or false"),
        ({"any": []}, "rules[0].where.any: expected a non-empty list"),
        ({"any": [{"x": {"lt": []}}]}, "rules[0].where.any[0].x.lt: expected a number"),
        ({"all": [5]}, "rules[0].where.all[0]: expected a mapping of conditions"),
        ({"not": {"x": {"not": {"regex": "["}}}}, "rules[0].where.not.x.not.regex: invalid regular expression"),
        (["x"], "rules[0].where: expected a mapping of conditions, got a list"),
    ],
)
def test_parse_errors_name_the_path(raw: object, message: str) -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter(raw, "rules[0].where")
    assert message in str(caught.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter({"a": {"gtt": 1}, "b": {"regex": "("}, "c": []}, "where")
    assert [path for path, _ in caught.value.problems] == ["where.a", "where.b.regex", "where.c"]


# -- the Run path and the stored-row path must agree --------------------------------------------


def _operand(operator: str) -> st.SearchStrategy[Any]:
    if operator in ("eq", "ne", "not"):
        return SCALARS
    if operator == "in":
        return st.lists(SCALARS, min_size=1, max_size=3)
    if operator == "regex":
        return st.sampled_from(["^t", "5..", "o|e", "^$", "1\\.5", "(?i)TRUE"])
    if operator == "contains":
        return st.sampled_from(["ri", "0", "", "."])
    if operator == "exists":
        return st.booleans()
    return st.sampled_from([0, 1.5, 200, 500, 2500.0, -1])


def _condition(key: str) -> st.SearchStrategy[Any]:
    if key == "error":
        return st.one_of(st.booleans(), st.fixed_dictionaries({"exists": st.booleans()}))
    operators = st.sampled_from(["eq", "ne", "in", "regex", "contains", "gt", "gte", "lt", "lte", "exists", "not"])
    operator_mapping = st.lists(operators, min_size=1, max_size=2, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({name: _operand(name) for name in names})
    )
    return st.one_of(SCALARS, st.lists(SCALARS, min_size=1, max_size=3), operator_mapping)


_leaf = st.sampled_from(FILTER_KEYS).flatmap(lambda key: _condition(key).map(lambda condition: {key: condition}))


def _merge(leaves: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for leaf in leaves:
        merged.update(leaf)
    return merged


_conditions = st.lists(_leaf, min_size=1, max_size=3).map(_merge)
filters = st.recursive(
    _conditions,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda members: {"any": members}),
        st.lists(inner, min_size=1, max_size=3).map(lambda members: {"all": members}),
        inner.map(lambda member: {"not": member}),
    ),
    max_leaves=6,
)
# Durations on and around the operands above, where a unit slip would flip an answer.
DURATIONS_NS = [0, 1_500_000, 150_000_000, 200_000_000, 499_999_999, 2_500_000_000, 2_500_000_001]
_maybe_text = st.one_of(st.none(), st.just(""), st.sampled_from(["support-bot", "triage", "gpt-4o", "u1"]))


@st.composite
def runs(draw: st.DrawFn) -> tuple[Run, dict[str, str], dict[str, str]]:
    span = draw(st.dictionaries(st.sampled_from(SPAN_KEYS), st.sampled_from(TEXT_VALUES), max_size=4))
    resource = draw(st.dictionaries(st.sampled_from(RESOURCE_KEYS), st.sampled_from(TEXT_VALUES), max_size=3))
    start = draw(st.integers(min_value=0, max_value=10**12))
    run = Run(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        service_name=draw(_maybe_text),
        agent_name=draw(_maybe_text),
        model=draw(_maybe_text),
        provider=draw(_maybe_text),
        session_id=draw(_maybe_text),
        user_id=draw(_maybe_text),
        error=draw(st.one_of(st.none(), st.just(""), st.just("boom"))),
        start_time_ns=start,
        end_time_ns=start + draw(st.one_of(st.sampled_from(DURATIONS_NS), st.integers(0, 5 * 10**9))),
        attributes=span,
        resource_attributes=resource,
    )
    return run, span, resource


def _snake_row(run: Run) -> dict[str, Any]:
    """The shape a backfill query over runs returns: Run field names."""
    return {
        "service_name": run.service_name,
        "agent_name": run.agent_name,
        "model": run.model,
        "provider": run.provider,
        "session_id": run.session_id,
        "user_id": run.user_id,
        "error": run.error,
        "start_time_ns": run.start_time_ns,
        "end_time_ns": run.end_time_ns,
        "attributes": dict(run.attributes),
        "resource_attributes": dict(run.resource_attributes),
        "trace_id": run.trace_id,
    }


def _otel_row(run: Run, span: dict[str, str], resource: dict[str, str]) -> dict[str, Any]:
    """The shape of an otel_traces root-span row joined with the run-level columns."""
    return {
        "ServiceName": run.service_name or "",
        "TraceId": run.trace_id,
        "Duration": run.end_time_ns - run.start_time_ns,
        "StatusCode": "Unset" if run.error is None else "Error",
        "SpanAttributes": span,
        "ResourceAttributes": resource,
        "agent_name": run.agent_name,
        "model": run.model,
        "provider": run.provider,
        "session_id": run.session_id,
        "user_id": run.user_id,
    }


@settings(max_examples=300, deadline=None)
@given(raw=filters, generated=runs())
def test_run_and_mapping_evaluation_agree(
    raw: dict[str, Any], generated: tuple[Run, dict[str, str], dict[str, str]]
) -> None:
    run, span, resource = generated
    compiled = parse_filter(raw)
    expected = compiled.matches(run)
    assert compiled.matches_mapping(_snake_row(run)) is expected
    assert compiled.matches_mapping(_otel_row(run, span, resource)) is expected


@settings(max_examples=300, deadline=None)
@given(raw=_leaf, generated=runs())
def test_single_conditions_agree(raw: dict[str, Any], generated: tuple[Run, dict[str, str], dict[str, str]]) -> None:
    # One condition at a time: a unit or lookup slip cannot hide behind an any/all around it.
    run, span, resource = generated
    compiled = parse_filter(raw)
    expected = compiled.matches(run)
    assert compiled.matches_mapping(_snake_row(run)) is expected
    assert compiled.matches_mapping(_otel_row(run, span, resource)) is expected
