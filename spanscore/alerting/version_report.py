"""A version comparison as an answer: the request checked, the sums read, the verdicts made, one JSON document.

The same document comes from ``spanscore report compare`` (CSV or store), ``POST /api/v1/compare`` and the
dashboard; its shape is contract C2, with run figures (latency, tokens) added when the scores come from the
store. The statistics are spanscore.alerting.comparison.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanscore.alerting.comparison import DEFAULT_MIN_EFFECT, ScorerComparison, Settings, Sums, VersionResult, compare
from spanscore.durations import parse_since
from spanscore.errors import ConfigError
from spanscore.storage.reads.compare import Reads, VersionRow, version_sums
from spanscore.storage.reads.compare_details import version_details

_NAME = re.compile(r"^[A-Za-z0-9_.:/\-]{1,200}$")
RUN_FIGURES = ("latency_p50_ms", "latency_p95_ms", "input_tokens_per_run", "output_tokens_per_run", "cost_per_run")


@dataclass(frozen=True, slots=True)
class CompareRequest:
    by: str
    baseline: str
    since: str = "24h"
    confidence: float = 0.95
    min_effect: float = DEFAULT_MIN_EFFECT
    scorers: tuple[str, ...] = ()

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> CompareRequest:
        """A request from a JSON body, every problem reported at once."""
        unknown = sorted(set(body) - {"by", "baseline", "since", "confidence", "min_effect", "scorers"})
        problems = [f"unknown field {name!r}" for name in unknown]
        request = cls(
            by=body.get("by", "service.version"),
            baseline=body.get("baseline", ""),
            since=body.get("since", "24h"),
            confidence=body.get("confidence", 0.95),
            min_effect=body.get("min_effect", DEFAULT_MIN_EFFECT),
            scorers=tuple(body.get("scorers") or ()),
        )
        problems += request.problems()
        if problems:
            raise ConfigError("; ".join(problems))
        return request

    def problems(self) -> list[str]:
        found = []
        if not isinstance(self.by, str) or not _NAME.match(self.by):
            found.append(f"by must be an attribute name (letters, digits, _ . : / -), got {self.by!r}")
        if not isinstance(self.baseline, str) or not self.baseline:
            found.append('baseline must name the version to compare with, e.g. "1.4.0"')
        if not isinstance(self.confidence, int | float) or not 0.5 <= self.confidence < 1:
            found.append(f"confidence must be in [0.5, 1), e.g. 0.95; got {self.confidence!r}")
        if not isinstance(self.min_effect, int | float) or not self.min_effect >= 0:
            found.append(f"min_effect must be a number >= 0, got {self.min_effect!r}")
        found += [
            f"scorers: {s!r} is not a scorer id" for s in self.scorers if not isinstance(s, str) or not _NAME.match(s)
        ]
        try:
            parse_since(str(self.since))
        except ConfigError as exc:
            found.append(str(exc).replace("--since", "since"))
        return found


def check_baseline(versions: Collection[str], baseline: str, by: str) -> None:
    if baseline not in versions:
        listed = sorted(versions)
        shown = ", ".join(listed[:20]) + (" ..." if len(listed) > 20 else "")
        raise ConfigError(f"baseline {baseline!r} has no scores; the {by} values with scores are: {shown or 'none'}")


def as_document(
    by: str,
    settings: Settings,
    scorers: Sequence[ScorerComparison],
    figures: Mapping[tuple[str, str], Mapping[str, float | None]] | None = None,
) -> dict[str, Any]:
    """The JSON answer (contract C2); ``figures`` adds run figures per (scorer, version) when there are any."""
    return {
        "by": by,
        "baseline": settings.baseline,
        "confidence": settings.confidence,
        "scorers": [
            {
                "scorer": s.scorer,
                "versions": [
                    _entry(r) | dict((figures or {}).get((s.scorer, r.summary.version), {})) for r in s.versions
                ],
            }
            for s in scorers
        ],
    }


def _entry(result: VersionResult) -> dict[str, Any]:
    s = result.summary
    return {
        "version": s.version,
        "n": s.n,
        "n_eff": s.n_eff,
        "mean": s.mean,
        "ci_low": _finite(s.ci_low),
        "ci_high": _finite(s.ci_high),
        "diff": result.diff,
        "diff_low": _finite(result.diff_low),
        "diff_high": _finite(result.diff_high),
        "verdict": result.verdict,
        "n_needed": result.n_needed,
    }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


async def compare_store(store: Reads, request: CompareRequest) -> dict[str, Any]:
    """Compare the versions of the stored scores (contract C2's document, with run figures)."""
    if request.problems():
        raise ConfigError("; ".join(request.problems()))
    rows = await version_sums(store, request.by, int(parse_since(request.since)), request.scorers)
    if not rows:
        raise ConfigError(
            f"no scores with a {request.by!r} in the last {request.since}: is the attribute set on the runs "
            f"(collector.runs.version_attributes keeps it with the scores), and were runs scored?"
        )
    check_baseline({r.version for r in rows}, request.baseline, request.by)
    in_unit = all(0.0 <= r.low and r.high <= 1.0 for r in rows)
    settings = Settings(request.baseline, request.confidence, request.min_effect, (0.0, 1.0) if in_unit else None)
    groups: dict[str, dict[str, Sums]] = {}
    for r in rows:
        groups.setdefault(r.scorer, {})[r.version] = Sums(r.n, r.w, r.w2, r.wy, r.w2y, r.w2y2, r.binary, r.w4)
    figures = {(r.scorer, r.version): _figures(r) for r in rows}
    return as_document(request.by, settings, compare(groups, settings), figures)


def _figures(row: VersionRow) -> dict[str, float | None]:
    values = (row.latency_p50_ms, row.latency_p95_ms, row.input_tokens, row.output_tokens, row.cost_per_run)
    return dict(zip(RUN_FIGURES, values, strict=True))


async def compare_details(store: Reads, request: CompareRequest) -> dict[str, Any]:
    """The compare page's hourly means and worst runs per scorer and version (``version_details``)."""
    if request.problems():
        raise ConfigError("; ".join(request.problems()))
    return await version_details(store, request.by, int(parse_since(request.since)), request.scorers)
