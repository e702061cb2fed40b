"""Alert test parts: a webhook receiver on loopback that records what it gets, and score rows to seed a window."""

from __future__ import annotations

import time

from spanscore.storage.scores import ScoreRow, external_score_id
from spanscore.testing.webhook import Receiver

__all__ = ["Receiver", "score_rows"]


def score_rows(values: list[float], start: int, rate: float = 1.0) -> list[ScoreRow]:
    now = time.time_ns()
    return [
        ScoreRow(
            score_id=external_score_id("test", "", "faithfulness", f"{start + i:032x}", "1" * 16),
            run_timestamp_ns=now, trace_id=f"{start + i:032x}", span_id="1" * 16, run_id="r",
            service_name="support-bot", agent_name="a", model="", session_id="", user_id="", rule="support-quality",
            scorer="faithfulness", scorer_version="1", score=value, label="pass" if value >= 0.5 else "fail",
            reason="", status="ok", error="", sample_rate=rate, higher_is_better=True, judge_model="",
            input_tokens=0, output_tokens=0, cost_usd=0.0, duration_ms=0.0, ready_reason="quiet",
            run_duration_ms=0.0, run_error="",
        )
        for i, value in enumerate(values)
    ]  # fmt: skip
