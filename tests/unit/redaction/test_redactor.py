"""The detectors, placeholders and policy of spanscore.redaction on small texts worked out by hand."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from spanscore.errors import ConfigError
from spanscore.redaction.config import RedactConfig, RedactionPolicies, rule_redactors
from spanscore.redaction.redactor import CUT_NOTE, Placeholders, Redactor
from spanscore.redaction.scope import default_redactor


def redact(text: str) -> str:
    return default_redactor().redact(text).text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe@example.org now", "mail <EMAIL_1> now"),
        ("card 4111 1111 1111 1111.", "card <CARD_1>."),
        ("IBAN DE89 3704 0044 0532 0130 00 TO ME", "IBAN <IBAN_1> TO ME"),
        ("call (415) 555-2671 or +44 20 7946 0958", "call <PHONE_1> or <PHONE_2>"),
        ("SSN 078-05-1120", "SSN <NATIONAL_ID_1>"),
        ("from 203.0.113.9 and 2001:db8::8a2e:370:7334", "from <IP_1> and <IP_2>"),
        ("key sk-proj-Xq7Lm2Vb9Rt4Kp8Wz3Hn6Jc1Fd5Gs0Ya!", "key <SECRET_1>!"),
        ("db postgres://app:s3cret@db:5432/x", "db postgres://<URL_CREDENTIALS_1>db:5432/x"),
        # Two misses of the blind set's texts the builder never saw: a lower-case IBAN, and an IPv6 address
        # that a log line ends with a colon.
        ("My IBAN is ch9300762011623852957 (lower case)", "My IBAN is <IBAN_1> (lower case)"),
        ("from 2a02:8101:4ebf:584a::a3e: invalid token", "from <IP_1>: invalid token"),
    ],
)
def test_each_builtin_detector_masks_its_kind(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "card-like 4111 1111 1111 1112 fails Luhn",
        "order 2025-004417 shipped, product code PN 1707-796-294",
        "version 10.0.19041.1 and v1.2.3.4 at 2024-01-15 10:30:00",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b uuid 123e4567-e89b-12d3-a456-426614174000",
        "remote git@github.com:acme/app.git, integrity sha512-hre4Esm8SpW+va2SVXdGf54EL1nyzU0DydbOasgZc7stmKJ==",
        "price $1,299.00, epoch 1732712345, request chatcmpl-N3lJmfBRQQRMFtu2Z8Ilk9JXYJFn1",
    ],
)
def test_look_alikes_stay(text: str) -> None:
    assert redact(text) == text


def test_the_same_value_gets_the_same_placeholder_across_texts_of_a_run() -> None:
    placeholders = Placeholders()
    redactor = default_redactor()
    first = redactor.redact("a@x.org wrote to b@x.org", placeholders).text
    second = redactor.redact("reply to B@x.org and a@x.org", placeholders).text
    assert first == "<EMAIL_1> wrote to <EMAIL_2>"
    assert second == "reply to <EMAIL_2> and <EMAIL_1>"  # emails compare without case


def test_findings_are_offsets_into_the_original_text() -> None:
    text = "😀 jane@x.org 4111111111111111"
    found = default_redactor().redact(text).findings
    assert [(f.detector, text[f.start : f.end]) for f in found] == [
        ("email", "jane@x.org"),
        ("card", "4111111111111111"),
    ]


def test_a_text_over_the_cap_is_cut_and_the_rest_never_sent() -> None:
    redactor = Redactor(default_redactor().detectors, max_chars=20)
    redacted = redactor.redact("x" * 20 + " jane@x.org")
    assert redacted.cut and redacted.text == "x" * 20 + CUT_NOTE and "jane" not in redacted.text


def test_a_crafted_text_costs_one_pass() -> None:
    """Inputs that make backtracking engines explode go through RE2 in one pass each (no timing asserted)."""
    for text in ("a" * 50_000 + "@", "1 " * 50_000, "-" * 50_000, ("ab" * 30) * 2_000):
        assert default_redactor().redact(text).text.startswith(text[:10])


def test_custom_patterns_and_words_from_config() -> None:
    config = RedactConfig.model_validate(
        {
            "default": "house",
            "sets": {
                "house": {
                    "detectors": ["email"],
                    "patterns": {"order_ref": "ORD-[0-9]{6}"},
                    "words": {"codenames": ["Kestrel", "Blue Bird"]},
                }
            },
        }
    )
    redactor = RedactionPolicies(config).for_rule()
    text = "ORD-123456 for kestrel and BLUE BIRD, not Kestrels; call 4111111111111111"
    assert redactor.redact(text).text == (
        "<CUSTOM:ORDER_REF_1> for <CUSTOM:CODENAMES_1> and <CUSTOM:CODENAMES_2>, not Kestrels; call 4111111111111111"
    )


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"sets": {"s": {"patterns": {"bad": "(a"}}}}, "invalid regular expression"),
        ({"sets": {"s": {"patterns": {"back": "(a)\\1"}}}}, "RE2"),
        ({"sets": {"s": {"detectors": ["emails"]}}}, "unknown detector"),
        ({"default": "missing"}, "no set named 'missing'"),
        ({"sets": {"s": {"words": {"w": []}}}}, "empty"),
        ({"phone_regions": ["XX"]}, "unknown region"),
    ],
)
def test_config_problems_are_named(section: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RedactConfig.model_validate(section)


class _Rule:
    def __init__(self, name: str, redact: list[str]) -> None:
        self.name, self.redact = name, redact


def test_a_rule_only_adds_to_the_default() -> None:
    config = RedactConfig.model_validate(
        {"default": "contacts", "sets": {"contacts": {"detectors": ["email"]}, "payments": {"detectors": ["card"]}}}
    )
    policies = RedactionPolicies(config)
    redactors = rule_redactors([_Rule("plain", []), _Rule("paying", ["payments"])], policies)
    assert redactors["plain"].names == ("email",)
    assert redactors["paying"].names == ("email", "card")
    with pytest.raises(ConfigError, match=r"rules\[0\].redact: no set named 'own'"):
        rule_redactors([_Rule("x", ["own"])], policies)
