"""docs/examples/redact.yaml loads as a whole config, and its rule masks what its sets say."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanscore.config import load_config
from spanscore.errors import ConfigError
from spanscore.redaction.config import RedactionPolicies, rule_redactors

EXAMPLE = Path(__file__).parents[3] / "docs" / "examples" / "redact.yaml"


def test_the_example_config_loads_and_its_rule_adds_billing_to_standard() -> None:
    config = load_config(EXAMPLE, environ={})
    (rule,) = config.rules
    redactor = rule_redactors(config.rules, RedactionPolicies(config.redact))[rule.name]
    text = "CUST-12345678 (Kestrel) paid with 4111 1111 1111 1111, mail jane@x.org, call 020 7946 0958"
    assert redactor.redact(text).text == (
        "<CUSTOM:CUSTOMER_REF_1> (<CUSTOM:CODENAMES_1>) paid with <CARD_1>, mail <EMAIL_1>, call <PHONE_1>"
    )


def test_collector_redact_names_a_set_and_refuses_pass_through(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("collector: {redact: strict}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="collector.redact: no set named 'strict'"):
        load_config(config, environ={})
    config.write_text(
        "collector: {redact: all}\nforward: {endpoint: 'http://127.0.0.1:4318', spans: true}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="forward.spans"):
        load_config(config, environ={})
    config.write_text("collector: {redact: all}\n", encoding="utf-8")
    assert load_config(config, environ={}).collector.redact == "all"
