"""Rule sets: one version for the same rules however written; a whole set refused on any problem."""

from __future__ import annotations

import pytest

from spanscore.errors import ConfigError
from spanscore.sampling.engine import RuleEngine
from spanscore.sampling.rule_sets import canonical_rules, diff_rules, parse_rules_document, rule_set_version
from spanscore.sampling.rules import SamplingConfig


def _rules(*raw: dict[str, object]) -> list:  # type: ignore[type-arg]
    return parse_rules_document({"rules": list(raw)}, source="test")


def test_the_version_depends_on_content_not_on_how_it_was_written() -> None:
    short = _rules({"name": "a", "sample": 0.5, "scorers": ["completeness"], "where": {"service.name": "x"}})
    long = _rules({"where": {"service.name": "x"}, "scorers": [{"name": "completeness"}], "sample": 0.5, "name": "a"})
    assert rule_set_version(short) == rule_set_version(long)
    assert rule_set_version(short) != rule_set_version(
        _rules({"name": "a", "sample": 0.6, "scorers": ["completeness"]})
    )
    other_filter = _rules({"name": "a", "sample": 0.5, "scorers": ["completeness"], "where": {"service.name": "y"}})
    assert rule_set_version(short) != rule_set_version(other_filter)


def test_a_document_is_refused_whole_with_every_problem() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rules_document(
            {"rules": [{"name": "a", "sample": 3, "scorers": ["completeness"]}, {"name": "a", "scorers": []}]},
            source="PUT",
        )
    text = str(caught.value)
    assert "rules[0].sample" in text and "rules[1].scorers" in text
    with pytest.raises(ConfigError, match="unexpected key"):
        parse_rules_document({"rules": [], "storage": {}}, source="PUT")
    with pytest.raises(ConfigError, match="'rules' is missing"):
        parse_rules_document({}, source="PUT")


def test_diff_names_added_removed_changed_and_order() -> None:
    old = canonical_rules(
        _rules({"name": "a", "scorers": ["completeness"]}, {"name": "b", "scorers": ["completeness"]})
    )
    new = canonical_rules(
        _rules({"name": "c", "scorers": ["completeness"]}, {"name": "a", "sample": 0.1, "scorers": ["completeness"]})
    )
    change = diff_rules(old, new)
    assert (change.added, change.removed, change.changed, change.reordered) == (("c",), ("b",), ("a",), False)
    assert diff_rules(old, old).empty


def test_a_new_rule_set_keeps_caps_of_unchanged_rules_and_resets_changed_ones() -> None:
    now = [1000.0]
    capped = {"name": "capped", "max_per_minute": 1, "scorers": ["completeness"]}
    changed = {"name": "changed", "max_per_minute": 1, "scorers": ["completeness"]}
    engine = RuleEngine(SamplingConfig(rules=_rules(capped, changed)), clock=lambda: now[0])
    for name in ("capped", "changed"):
        assert engine._buckets[name].try_take()
    reloaded = engine.with_rules(SamplingConfig(rules=_rules(capped, {**changed, "max_per_minute": 2})))
    assert not reloaded._buckets["capped"].try_take()  # the same bucket: already spent this minute
    assert reloaded._buckets["changed"].try_take()  # a new limit, a new bucket
