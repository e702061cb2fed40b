"""Fuzzing the filter language: any `where:` value compiles to a working filter or fails with its rules path.

Expressions mix the language's real words (``any``, ``all``, ``not``, operators, run fields, attribute keys)
with random keys, operands of every YAML type and malformed regular expressions, nested a few levels deep.
A compiled filter must then evaluate random runs and stored-row mappings without raising, and a failing one
must list problems whose paths start at the rule's ``where``; the same holds through the config loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanscore.config import load_config
from spanscore.errors import ConfigError
from spanscore.run import Run
from spanscore.sampling.filters import OPERATORS, Filter, FilterError, parse_filter
from tests.unit.sampling.test_sampling_filters import FILTER_KEYS, runs

_operands = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        st.sampled_from(["(", "[a-", "^t", "(?i)x", "a{2,1}", "\\", "*", "(?P<x>a)(?P=y)", "200", "true"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=2)),
    max_leaves=5,
)
_keys = st.one_of(
    st.sampled_from([*FILTER_KEYS, "span.tier", "resource.region", "error", "latency_ms"]),
    st.text(max_size=8),
    st.integers(),
)
_operator_maps = st.dictionaries(st.one_of(st.sampled_from(OPERATORS), st.text(max_size=5)), _operands, max_size=3)
_conditions = st.dictionaries(_keys, st.one_of(_operands, _operator_maps), max_size=3)
expressions = st.recursive(
    _conditions,
    lambda inner: st.one_of(
        st.dictionaries(st.sampled_from(["any", "all"]), st.one_of(st.lists(inner, max_size=3), _operands), max_size=1),
        st.fixed_dictionaries({"not": st.one_of(inner, _operands)}),
        st.tuples(inner, inner).map(lambda pair: {**pair[0], **pair[1]}),
    ),
    max_leaves=8,
)
anything = st.one_of(expressions, _operands)
_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(raw=anything, generated=runs())
@pytest.mark.reliability("bad-input-clear-error")
def test_any_where_compiles_and_evaluates_or_names_its_path(
    raw: Any, generated: tuple[Run, dict[str, str], dict[str, str]]
) -> None:
    """A random `where:` value: a filter that evaluates runs and rows without raising, or every problem at its path."""
    try:
        compiled = parse_filter(raw, "rules[3].where")
    except FilterError as error:
        assert error.problems, "a FilterError without problems"
        for path, message in error.problems:
            assert path.startswith("rules[3].where"), path
            assert message and "\n" not in message and "\r" not in message, message
            assert "\n" not in path and "\r" not in path, path
        return
    assert isinstance(compiled, Filter)
    run, span, resource = generated
    by_run = compiled.matches(run)
    by_row = compiled.matches_mapping(
        {"service_name": run.service_name, "attributes": span, "resource_attributes": resource}
    )
    assert isinstance(by_run, bool) and isinstance(by_row, bool)


@_settings
@given(raw=anything)
@pytest.mark.reliability("bad-input-clear-error")
def test_any_where_in_a_config_file_loads_or_names_the_rule(tmp_path: Path, raw: Any) -> None:
    """The same expressions as a rule's `where:` in a config file: a config, or a ConfigError at rules[0].where."""
    path = tmp_path / "spanscore.yaml"
    rules = [{"name": "fuzzed", "scorers": ["completeness"], "where": raw}]
    path.write_text(yaml.safe_dump({"rules": rules}, allow_unicode=True), encoding="utf-8")
    try:
        config = load_config(path, environ={})
    except ConfigError as error:
        message = str(error)
        assert str(path) in message
        problems = message.split("\n")[1:]
        assert problems and all(line.startswith("  rules[0].where") for line in problems), message
        return
    assert config.rules[0].where.matches(Run(service_name="support-bot")) in (True, False)
