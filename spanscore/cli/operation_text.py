"""``rules preview`` and ``backfill`` answers as lines a person reads (``--format json`` keeps the raw answer)."""

from __future__ import annotations

from typing import Any

from spanscore.printable import printable


def preview_text(answer: dict[str, Any], since: str) -> str:
    """What a rule would match, sample and cost over the window, one fact a line."""
    outcomes = ", ".join(f"{name} {count}" for name, count in sorted(answer.get("outcomes", {}).items())) or "none"
    cost = answer.get("estimated_cost_usd")
    cost_text = f"${cost:.6f}" if isinstance(cost, int | float) else "unknown (no judged score of this rule is stored)"
    return "\n".join(
        [
            f"rule {printable(str(answer.get('rule')))} over the last {since}:",
            f"  candidates {answer.get('candidates', 0)}, matched {answer.get('matched', 0)}, "
            f"sampled {answer.get('sampled', 0)}",
            f"  outcomes: {outcomes}",
            f"  estimated judge calls {answer.get('estimated_judge_calls', 0)}, estimated cost {cost_text}",
            *_would_send_lines(answer.get("would_send") or []),
        ]
    )


def _would_send_lines(shown: list[dict[str, Any]]) -> list[str]:
    """What the judges would be sent for the newest sampled run, redacted; masked values counted per detector."""
    lines: list[str] = []
    for item in shown:
        masked = ", ".join(f"{name}={count}" for name, count in sorted((item.get("masked") or {}).items())) or "none"
        lines.append(f"  {printable(str(item.get('scorer')))} {item.get('step')} would send (masked: {masked}):")
        lines.extend(f"    | {printable(line)}" for line in str(item.get("text", "")).splitlines())
    return lines


def backfill_text(answer: dict[str, Any]) -> str:
    """How a backfill ended: runs found, scored, skipped, and whether it was cancelled."""
    state = "cancelled (what was scored stays; run it again to go on)" if answer.get("cancelled") else "finished"
    counts = ", ".join(
        f"{key.replace('_', ' ')} {value}" for key, value in sorted(answer.items()) if isinstance(value, int | float)
    )
    return f"backfill {state}: {counts}"


def cancel_text(answer: dict[str, Any]) -> str:
    """Which backfills a cancel stopped, or why it stopped none."""
    if not answer.get("cancelled"):
        return f"nothing cancelled: {printable(str(answer.get('reason', 'no backfill is running')))}"
    rules = ", ".join(printable(str(rule)) for rule in answer.get("rules", []))
    return f"cancelled the backfill of {rules}; what it scored stays written"
