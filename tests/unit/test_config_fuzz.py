"""Fuzzing the config loader: any YAML document gives a valid config or a ConfigError naming key and file.

Documents are built from the real schema (every section and key of ``ServiceConfig``, walked from the pydantic
models, plus the judge section's and a rule's keys) with random values of every YAML type, unknown keys, and
sometimes raw text that is not YAML at all; the environment overlay gets random ``SPANSCORE_*`` variables.
Whatever comes in, ``load_config`` returns a ``ServiceConfig`` or raises ``ConfigError``, never anything else.
"""

from __future__ import annotations

import math
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from spanscore.config import ServiceConfig, load_config
from spanscore.errors import ConfigError
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.judge.config import JudgeConfig

FUZZ_EXAMPLES = 100

Tree = dict[str, "Tree | None"]


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as ``X``, ``X | None`` or ``Optional[X]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            found = _model_of(member)
            if found is not None:
                return found
    return None


def _tree(model: type[BaseModel]) -> Tree:
    tree: Tree = {}
    for name, field in model.model_fields.items():
        nested = _model_of(field.annotation)
        tree[name] = _tree(nested) if nested is not None else None
    return tree


SCHEMA = _tree(ServiceConfig)
SCHEMA["judge"] = _tree(JudgeConfig)
RULE_KEYS = _tree(RuleConfig)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.sampled_from([0, 1, -1, 1024, 4317, 65535, 65536, 1 << 30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=24),
    st.sampled_from(
        ["127.0.0.1", "chdb:///tmp/x", "chdb://rel", "clickhouse://u:p@h:8123/", "grpc", "INFO", "openai/gpt", ""]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=3)
    ),
    max_leaves=8,
)
_random_where = st.recursive(
    st.dictionaries(st.sampled_from(["service.name", "any", "all", "not", "x", "error"]), _values, max_size=3),
    lambda inner: st.dictionaries(
        st.sampled_from(["any", "all", "not", "y"]), st.one_of(inner, st.lists(inner)), max_size=2
    ),
    max_leaves=6,
)


def _section(tree: Tree) -> st.SearchStrategy[Any]:
    """A mapping over ``tree``'s keys (each optional, nested sections recursively) plus the odd unknown key."""
    optional = {key: (_section(sub) if sub else _values) | _values for key, sub in tree.items()}
    known = st.fixed_dictionaries({}, optional=optional)
    unknown = st.dictionaries(st.text(min_size=1, max_size=10), _values, max_size=1)
    return st.tuples(known, unknown).map(lambda pair: {**pair[1], **pair[0]})


_rule = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.sampled_from(["a", "b", ""]), _scalars),
        "where": st.one_of(_random_where, _values),
        "sample": st.one_of(st.floats(allow_nan=True), _scalars),
        "scorers": st.one_of(st.lists(st.sampled_from(["completeness", "toxicity", ""]), max_size=2), _values),
        **{key: _values for key in RULE_KEYS if key not in ("name", "where", "sample", "scorers")},
    },
)
documents = st.one_of(
    _section(SCHEMA).flatmap(
        lambda document: st.lists(_rule, max_size=3).map(
            lambda rules: {**document, "rules": rules} if rules else document
        )
    ),
    _values,
)
_environment = st.dictionaries(
    st.sampled_from(
        [
            "SPANSCORE_COLLECTOR__GRPC__PORT",
            "SPANSCORE_STORAGE__DSN",
            "SPANSCORE_COLLECTOR__AUTH_TOKENS",
            "SPANSCORE_STORAGE",
            "SPANSCORE_RULES",
            "SPANSCORE_JUDGE__TIMEOUT_S",
            "SPANSCORE_NOPE__X",
            "SPANSCORE_LOG_LEVEL",
        ]
    ),
    st.one_of(st.text(max_size=12), st.sampled_from(["0", "[a, b]", "{x: 1}", "- 1", "null", "'", "[", "70000"])),
    max_size=2,
)


def _check_message(error: ConfigError, path: Path, environ: dict[str, str]) -> None:
    message = str(error)
    if message.startswith("environment "):
        assert any(name in message for name in environ), message
        return
    assert str(path) in message, message
    lines = message.splitlines()
    if "problem(s)" in lines[0]:
        assert len(lines) > 1, message
        for line in lines[1:]:
            where, _, problem = line.strip().partition(": ")
            assert where and problem, f"a problem without its key: {line!r}"


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(document=documents, environ=_environment)
@pytest.mark.reliability("bad-input-clear-error")
def test_any_yaml_document_loads_or_names_key_and_file(tmp_path: Path, document: Any, environ: dict[str, str]) -> None:
    """Random YAML over the real config schema (and random SPANSCORE_* variables): a config or a ConfigError."""
    path = tmp_path / "spanscore.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    try:
        config = load_config(path, environ=environ)
    except ConfigError as error:
        _check_message(error, path, environ)
        return
    assert isinstance(config, ServiceConfig)
    assert config.storage.dsn and config.storage.spool_dir
    for rule in config.rules:
        assert 0.0 <= rule.sample <= 1.0 and not math.isnan(rule.sample)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=80))
@pytest.mark.reliability("bad-input-clear-error")
def test_any_text_loads_or_names_the_file(tmp_path: Path, text: str) -> None:
    """Arbitrary text as the config file (mostly not YAML): a config or a ConfigError naming the file."""
    path = tmp_path / "spanscore.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_config(path, environ={})
    except ConfigError as error:
        _check_message(error, path, {})
