"""``spanscore report compare``: versions side by side per scorer, with intervals and a verdict.

The scores come from a CSV (``--scores-csv``, no service or store needed; /work's contract C2) or from the
store. The arithmetic is spanscore.alerting.comparison; this module reads the input and renders the answer
as JSON, CSV or a table.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from spanscore.alerting.comparison import Observation, ScorerComparison, Settings, VersionResult, compare
from spanscore.cli.tables import format_table
from spanscore.errors import ConfigError

CSV_COLUMNS = ("version", "scorer", "value", "inclusion_probability")
Groups = dict[str, dict[str, list[Observation]]]


def read_scores_csv(path: str, by: str) -> Groups:
    """Scorer -> version -> observations from a CSV with CSV_COLUMNS; any bad row is an error naming its line."""
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"--scores-csv {path}: cannot read it ({exc.strerror or exc})") from exc
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in (*CSV_COLUMNS[1:], by) if c not in (reader.fieldnames or [])]
    if missing:
        raise ConfigError(
            f"--scores-csv {path}: the header lacks {', '.join(missing)} "
            f"(expected {','.join(CSV_COLUMNS)}; --by names the version column)"
        )
    groups: Groups = {}
    for row in reader:
        line = reader.line_num
        value = _number(row, "value", path, line)
        probability = _number(row, "inclusion_probability", path, line)
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"--scores-csv {path} line {line}: value {value!r} is outside [0, 1]")
        if not 0.0 < probability <= 1.0:
            raise ConfigError(
                f"--scores-csv {path} line {line}: inclusion_probability {probability!r} is outside (0, 1]"
            )
        version, scorer = row[by] or "", row["scorer"] or ""
        if not scorer:
            raise ConfigError(f"--scores-csv {path} line {line}: the scorer is empty")
        groups.setdefault(scorer, {}).setdefault(version, []).append(Observation(value, probability))
    if not groups:
        raise ConfigError(f"--scores-csv {path}: no rows after the header")
    return groups


def _number(row: Mapping[str, str | None], column: str, path: str, line: int) -> float:
    raw = row.get(column)
    try:
        value = float(raw or "")
    except ValueError:
        raise ConfigError(f"--scores-csv {path} line {line}: {column} {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"--scores-csv {path} line {line}: {column} {raw!r} is not a finite number")
    return value


def check_baseline(groups: Groups, baseline: str, by: str) -> None:
    versions = sorted({v for per_scorer in groups.values() for v in per_scorer})
    if baseline not in versions:
        shown = ", ".join(versions[:20]) + (" ..." if len(versions) > 20 else "")
        raise ConfigError(f"--baseline {baseline!r} has no scores; the {by} values with scores are: {shown}")


def check_confidence(confidence: float) -> None:
    if not 0.5 <= confidence < 1.0:
        raise ConfigError(f"--confidence must be in [0.5, 1), e.g. 0.95; got {confidence!r}")


def as_document(by: str, settings: Settings, scorers: Sequence[ScorerComparison]) -> dict[str, object]:
    """The JSON answer (contract C2): scorers, each with its versions' figures and verdicts."""
    return {
        "by": by,
        "baseline": settings.baseline,
        "confidence": settings.confidence,
        "scorers": [{"scorer": s.scorer, "versions": [_version_entry(r) for r in s.versions]} for s in scorers],
    }


def _version_entry(result: VersionResult) -> dict[str, object]:
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


ROW_COLUMNS = ("scorer", "version", "n", "n_eff", "mean", "ci_low", "ci_high", "diff", "diff_low", "diff_high",
               "verdict", "n_needed")  # fmt: skip


def flat_rows(document: Mapping[str, object]) -> list[dict[str, object]]:
    scorers = document["scorers"]
    assert isinstance(scorers, list)
    return [{"scorer": s["scorer"], **entry} for s in scorers for entry in s["versions"]]


def render(document: Mapping[str, object], output: str, extra_columns: Iterable[str] = ()) -> str:
    """JSON as the contract has it; CSV and the table one row per (scorer, version)."""
    if output == "json":
        return json.dumps(document, indent=2) + "\n"
    columns = [*ROW_COLUMNS, *extra_columns]
    rows = flat_rows(document)
    if output == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()
    shown = [{c: _cell(row.get(c)) for c in columns} for row in rows]
    header = (
        f"by {document['by']}, baseline {document['baseline']}, confidence {document['confidence']}"
        " (verdicts corrected across scorers: Holm)\n"
    )
    return header + format_table({"meta": [{"name": c} for c in columns], "data": shown})


def _cell(value: object) -> object:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"
    return "" if value is None else value


def compare_csv(path: str, by: str, baseline: str, confidence: float, output: str, min_effect: float) -> str:
    """``report compare --scores-csv``: read, compare, render."""
    check_confidence(confidence)
    groups = read_scores_csv(path, by)
    check_baseline(groups, baseline, by)
    settings = Settings(baseline, confidence, min_effect)
    return render(as_document(by, settings, compare(groups, settings)), output)
