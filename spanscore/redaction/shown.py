"""What a judge score row says about its redaction: the text as sent, and which detectors fired (counts only).

The run page's "What was scored" shows both beside the run, so an operator sees exactly what left for the
judge. The text is the already-redacted prompt (placeholders, never values); the mapping is not in it.
"""

from __future__ import annotations

from collections.abc import Mapping

SENT_ATTRIBUTE = "judge.sent"
REDACTIONS_ATTRIBUTE = "judge.redactions"
MAX_SENT_CHARS = 8_000
"""How much of what the judge was sent a score row keeps: enough to read, bounded per row."""


def describe_redactions(counts: Mapping[str, int]) -> str:
    """``card=2, email=3``: detectors in name order, each with how many values it masked."""
    return ", ".join(f"{detector}={count}" for detector, count in sorted(counts.items()))


def judge_sent_attributes(prompts: Mapping[str, str], counts: Mapping[str, int]) -> dict[str, str]:
    """Score-row attributes for a judge score: the prompts as sent (step by step, cut) and the counts."""
    if not prompts:
        return {}
    sent = "\n\n".join(f"[{step}]\n{prompt}" for step, prompt in prompts.items())
    if len(sent) > MAX_SENT_CHARS:
        sent = sent[:MAX_SENT_CHARS] + f"\n[... {len(sent) - MAX_SENT_CHARS} more characters sent]"
    return {SENT_ATTRIBUTE: sent, REDACTIONS_ATTRIBUTE: describe_redactions(counts) or "none"}
