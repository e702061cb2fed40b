"""``spanscore report compare``: versions side by side per scorer, with intervals and a verdict.

The scores come from a CSV (``--scores-csv``, no service or store needed; the CSV and JSON shapes are in
docs/compare.md) or from the store. The arithmetic is spanscore.alerting.comparison; this module reads the
input and renders the answer as JSON, CSV or a table.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from spanscore.alerting.comparison import Observation, Settings, Sums, compare
from spanscore.alerting.version_report import RUN_FIGURES, CompareRequest, as_document, check_baseline, compare_store
from spanscore.cli.reach import call_api, open_existing_store
from spanscore.cli.tables import format_table
from spanscore.config import ServiceConfig
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


def check_confidence(confidence: float) -> None:
    if not 0.5 <= confidence < 1.0:
        raise ConfigError(f"--confidence must be in [0.5, 1), e.g. 0.95; got {confidence!r}")


ROW_COLUMNS = ("scorer", "version", "n", "n_eff", "mean", "ci_low", "ci_high", "diff", "diff_low", "diff_high",
               "verdict", "n_needed")  # fmt: skip


def flat_rows(document: Mapping[str, object]) -> list[dict[str, object]]:
    scorers = document["scorers"]
    assert isinstance(scorers, list)
    return [{"scorer": s["scorer"], **entry} for s in scorers for entry in s["versions"]]


def render(document: Mapping[str, object], output: str) -> str:
    """JSON as the contract has it; CSV and the table one row per (scorer, version)."""
    if output == "json":
        return json.dumps(document, indent=2) + "\n"
    rows = flat_rows(document)
    columns = [*ROW_COLUMNS, *(c for c in RUN_FIGURES if any(c in row for row in rows))]
    if output == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()
    shown = [{c: _cell(row.get(c), c) for c in columns} for row in rows]
    header = (
        f"by {document['by']}, baseline {document['baseline']}, confidence {document['confidence']}"
        " (verdicts corrected across scorers: Holm)\n"
    )
    return header + format_table({"meta": [{"name": c} for c in columns], "data": shown})


def _cell(value: object, column: str = "") -> object:
    if column == "cost_per_run":  # unknown is not free; cents and fractions of them both show
        return "unknown" if value is None else f"{value:.6g}"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"
    return "" if value is None else value


def compare_csv(path: str, by: str, baseline: str, confidence: float, output: str, min_effect: float) -> str:
    """``report compare --scores-csv``: read, compare, render."""
    check_confidence(confidence)
    groups = read_scores_csv(path, by)
    check_baseline({v for versions in groups.values() for v in versions}, baseline, by)
    settings = Settings(baseline, confidence, min_effect)
    sums = {scorer: {v: Sums.of(obs) for v, obs in versions.items()} for scorer, versions in groups.items()}
    return render(as_document(by, settings, compare(sums, settings)), output)


def compare_stored(config: ServiceConfig, by: str, baseline: str, since: str, confidence: float, output: str,
                   min_effect: float, scorers: list[str] | None) -> str:  # fmt: skip
    """``report compare`` over the store: the running service answers (POST /api/v1/compare), else the store."""
    request = CompareRequest(by, baseline, since, confidence, min_effect, tuple(scorers or ()))
    problems = request.problems()
    if problems:
        raise ConfigError("; ".join(problems))
    body = call_api(config, "compare", asdict(request), 120)
    if body is not None:
        return render(json.loads(body), output)
    document = asyncio.run(_from_store(config, request))
    return render(document, output)


async def _from_store(config: ServiceConfig, request: CompareRequest) -> dict[str, Any]:
    store = open_existing_store(config)
    try:
        return await compare_store(store, request)
    finally:
        store.close()
