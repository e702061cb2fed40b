"""Metric keys round-trip whatever a label holds, and every metric the service reports has a Prometheus type."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from spanscore.config import ServiceConfig
from spanscore.metric_keys import metric_key, parse_metric_key
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.workers import JobState
from spanscore.server.prometheus import KINDS, exposition, split_key
from spanscore.server.service import Service


@pytest.fixture
async def service_metrics(service_config: ServiceConfig) -> AsyncIterator[dict[str, float]]:
    """The metrics dict of a service with live scoring, built but not started (the keys do not need traffic)."""
    service_config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["completeness"]})]
    service = Service(service_config)
    try:
        yield service.metrics()
    finally:
        await service.shutdown()


@given(rule=st.text(), status=st.text())
def test_a_key_gives_back_its_name_and_labels_exactly(rule: str, status: str) -> None:
    key = metric_key("scores_written", rule=rule, status=status)
    assert parse_metric_key(key) == ("scores_written", {"rule": rule, "status": status})


@given(rule=st.text())
def test_any_label_value_survives_the_official_parser(rule: str) -> None:
    body, content_type = exposition({metric_key("scores_written", rule=rule, status="ok"): 3})
    assert content_type.startswith("text/plain")
    [family] = text_string_to_metric_families(body.decode())
    assert family.type == "counter"
    assert [(s.name, s.labels, s.value) for s in family.samples] == [
        ("spanscore_scores_written_total", {"rule": rule, "status": "ok"}, 3.0)
    ]


def test_every_key_the_service_reports_has_a_declared_kind(service_metrics: dict[str, float]) -> None:
    keys = set(service_metrics) | {f"scoring_jobs_{state.value}" for state in JobState}
    keys |= {metric_key("scores_written", rule="r", status="ok"), metric_key("decisions_written", decision="d")}
    assert {split_key(key)[0] for key in keys} - set(KINDS) == set()
    states = {split_key(f"scoring_jobs_{state.value}")[0] for state in JobState}
    assert states == {"scoring_jobs", "scoring_jobs_ended"}
