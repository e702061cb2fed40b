"""Agreement with the reference: score the golden corpus and compare with @mastra/evals' outputs.

A test harness, kept out of the runtime package: used by the golden test (tests/unit/scorers) and by the
benchmark in bench/scorers (``python -m bench.scorers.throughput`` from the repository root). The corpus,
the cases and the reference's results live in tests/fixtures/golden as JSON lines; see
bench/scorers/README.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanscore.run import Run
from spanscore.scorers.base import Scorer, ScoreResult
from spanscore.scorers.registry import build

TOLERANCE = 0.01


@dataclass(slots=True)
class GoldenCase:
    case: int
    run: Run
    scorer_name: str
    options: dict[str, Any]
    scorer: Scorer
    reference_score: float | None
    reference_error: str | None


@dataclass(slots=True)
class Agreement:
    """Per-scorer agreement counts; ``disagreements`` keeps the case numbers that differ."""

    total: int = 0
    agreed: int = 0
    disagreements: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agreed / self.total if self.total else 1.0


def run_from_record(record: dict[str, Any]) -> Run:
    return Run(
        input=record.get("input"),
        output=record.get("output"),
        context=record.get("context"),
        ground_truth=record.get("ground_truth"),
        tool_calls=record.get("tool_calls"),
        system=record.get("system"),
        run_id=str(record.get("id", "")),
    )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load_cases(directory: Path) -> list[GoldenCase]:
    runs = {r["id"]: run_from_record(r) for r in _read_jsonl(directory / "corpus.jsonl")}
    scorers: dict[str, Scorer] = {}
    cases = []
    for ref in _read_jsonl(directory / "reference.jsonl"):
        key = json.dumps([ref["scorer"], ref["options"]], sort_keys=True)
        if key not in scorers:
            scorers[key] = build(ref["scorer"], **ref["options"])
        cases.append(
            GoldenCase(
                ref["case"],
                runs[ref["run"]],
                ref["scorer"],
                ref["options"],
                scorers[key],
                ref["score"],
                ref.get("error"),
            )
        )
    return cases


def agrees(case: GoldenCase, result: ScoreResult) -> bool:
    """A reference error agrees with any non-score outcome; scores agree within ``TOLERANCE``."""
    if case.reference_score is None:
        return result.score is None
    return result.score is not None and abs(result.score - case.reference_score) <= TOLERANCE


def measure(cases: list[GoldenCase]) -> dict[str, Agreement]:
    table: dict[str, Agreement] = defaultdict(Agreement)
    for case in cases:
        entry = table[case.scorer_name]
        entry.total += 1
        if agrees(case, case.scorer.run(case.run)):
            entry.agreed += 1
        else:
            entry.disagreements.append(case.case)
    return dict(table)
