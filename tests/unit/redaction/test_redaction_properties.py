"""Properties of any redaction: findings are ordered, disjoint and inside the text, and the redacted text is the
original with exactly those spans replaced by placeholders."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.redaction.scope import default_redactor

FRAGMENTS = st.sampled_from(
    [
        "jane.doe@example.org", "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "+44 20 7946 0958",
        "078-05-1120", "203.0.113.9", "sk-proj-Xq7Lm2Vb9Rt4Kp8Wz3Hn6Jc1Fd5Gs0Ya", "https://u:p4ss@h.io/x",
        "order 2025-004417", "v1.2.3.4", "😀", "é", " ", "\n", ",", "@", ":", "-", "0", "A",
    ]
)  # fmt: skip
PLACEHOLDER = re.compile(r"<[A-Z_:]+_\d+>")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(FRAGMENTS, st.text(max_size=12)), max_size=12))
def test_findings_rebuild_the_redacted_text(parts: list[str]) -> None:
    text = "".join(parts)
    redacted = default_redactor().redact(text)
    rebuilt, position = [], 0
    for finding in redacted.findings:
        assert position <= finding.start < finding.end <= len(text)
        rebuilt.append(re.escape(text[position : finding.start]))
        rebuilt.append(PLACEHOLDER.pattern)
        position = finding.end
    rebuilt.append(re.escape(text[position:]))
    assert re.fullmatch("".join(rebuilt), redacted.text, flags=re.DOTALL)
