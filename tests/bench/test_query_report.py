"""The query section of docs/benchmarks.md: rendered from results, and spliced in place of the old one."""

from __future__ import annotations

from typing import Any

from bench.query_report import HEADING, query_section, splice


def query(p50: float | None, error: str = "") -> dict[str, Any]:
    ms = [] if p50 is None else [p50, p50 * 1.5]
    return {"ms": ms, "p50_ms": p50, "min_ms": min(ms, default=None), "max_ms": max(ms, default=None), "error": error}


def step(scores: int, rollup: float, raw: float | None) -> dict[str, Any]:
    tables = {name: {"rows": scores // 10, "bytes": scores * 10, "parts": 2} for name in ("scores_1m", "scores_1h")}
    tables["scores_1h"]["quantile_state_bytes"] = scores * 9
    tables["scores"] = {"rows": scores, "bytes": scores * 100, "parts": 3}
    return {
        "scores": scores,
        "scorer_scores": scores // 8,
        "seed_s": 1.0,
        "tables": tables,
        "agree": True,
        "queries": {
            "rollup": query(rollup),
            "rollup_no_p50": query(rollup / 10),
            "raw": query(raw, "timeout"),
            "raw_final": query(raw),
        },
    }


RESULTS = {"runs": 5, "steps": [step(1_000_000, 40, 300), step(10_000_000, 50, None)], "merged": step(10**7, 30, 900)}


def test_the_section_states_the_target_verdict_and_the_growth() -> None:
    text = "\n".join(query_section(RESULTS, {"date": "today"}))
    assert text.startswith(HEADING)
    assert "| 10,000,000 | 1,250,000 | 1,000,000 (2) | 90% | 50 (50-75) | 5 (5-8) | stopped: timeout |" in text
    assert "meets (<= 200 ms)" in text and "misses" not in text
    assert "| 10,000,000 | 10x | 1,000.0 / 200.0 | 10.0x | 50 (50-75) | 1.2x | 5 (5-8) | 1.2x | stopped" in text
    assert "Conditions of this section's run: date today" in text


def test_splice_replaces_the_old_section_and_keeps_the_rest() -> None:
    before, after = "# Benchmarks\n\n## 4. Before\n\nfour\n\n", "## What bounds each figure\n\nbounds\n"
    old = f"{before}{HEADING}\n\nold figures\n\n### Cost growth\n\nold\n\n{after}"
    new = splice(old, [HEADING, "", "new figures"])
    assert new == f"{before}{HEADING}\n\nnew figures\n\n{after}"
    # Without a section 5 yet, it goes in before the bounds section.
    assert splice(before + after, [HEADING, "", "new figures"]) == new
