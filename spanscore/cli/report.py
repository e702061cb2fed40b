"""Named reports over the roll-ups: ``spanscore report trend`` prints a score series with a sparkline.

Reports are read-only SQL sent through the same guarded query path as
``spanscore query``. The values they put into SQL come only from checked
arguments (a scorer id pattern, a number of seconds, a fixed bucket name),
never from free text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from spanscore.cli.tables import format_table
from spanscore.durations import parse_since
from spanscore.errors import ConfigError
from spanscore.storage.reads import reports

SPARKS = "▁▂▃▄▅▆▇█"
_SCORER = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
BUCKETS = reports.BUCKETS


def trend_sql(scorer: str, since: str, by: str, rule: str | None = None) -> str:
    """The trend query for one scorer: per bucket, count, mean, weighted mean, p50 and pass rate."""
    if not _SCORER.match(scorer):
        raise ConfigError(f"--scorer must be a scorer id (letters, digits, _ . : -), got {scorer!r}")
    if rule is not None and not _SCORER.match(rule):
        raise ConfigError(f"--rule must be a rule name (letters, digits, _ . : -), got {rule!r}")
    if by not in BUCKETS:
        raise ConfigError(f"--by must be one of {', '.join(BUCKETS)}, got {by!r}")
    return reports.trend_sql(scorer, BUCKETS[by], int(parse_since(since)), rule)


def _require_scorer_with_data(run_query: Callable[[str, str], bytes], scorer: str) -> None:
    """A scorer id with no scores at all is a typo more often than a quiet scorer: say which ids have data."""
    result = json.loads(run_query(reports.SCORERS_WITH_DATA_SQL, "json"))
    known = [str(row["Scorer"]) for row in result.get("data", [])]
    if scorer not in known:
        listed = ", ".join(known) if known else "none yet"
        raise ConfigError(f"no scores for scorer {scorer!r} at any time; scorers with data: {listed}")


def sparkline(values: list[float | None]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return ""
    low, high = min(present), max(present)
    span = high - low or 1.0
    return "".join(" " if v is None else SPARKS[round((v - low) / span * (len(SPARKS) - 1))] for v in values)


def trend(run_query: Callable[[str, str], bytes], scorer: str, since: str, by: str, output: str,
          rule: str | None = None) -> str:  # fmt: skip
    """Run the trend query and render it as a table with a sparkline, or pass JSON/CSV through."""
    sql = trend_sql(scorer, since, by, rule)
    _require_scorer_with_data(run_query, scorer)
    if output in ("csv", "tsv"):
        return run_query(sql, output).decode("utf-8")
    result = json.loads(run_query(sql, "json"))
    rows = result.get("data", [])
    if output == "json":
        return json.dumps(rows, indent=2) + "\n"

    means = [None if row["mean"] is None else float(row["mean"]) for row in rows]
    header = f"{scorer} over {since} by {by}: {len(rows)} bucket(s)  {sparkline(means)}\n"
    return header + format_table(result)


_SOURCE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


def agreement_sql(scorer: str, name: str, source: str, since: str) -> str:
    """Each outside judgement ``name`` from ``source`` beside spanscore's latest ``scorer`` score of its trace."""
    for flag, value, pattern in (
        ("--scorer", scorer, _SCORER),
        ("--name", name, _SCORER),
        ("--source", source, _SOURCE),
    ):
        if not pattern.match(value):
            raise ConfigError(f"{flag} has characters a name cannot have: {value!r}")
    return reports.agreement_sql(scorer, name, source, int(parse_since(since)))


def agreement_report(
    run_query: Callable[[str, str], bytes], scorer: str, name: str | None, source: str, since: str, output: str
) -> tuple[int, str]:
    """(exit code, text): 0 with the figures, 1 with where it looked when no run has both judgements."""
    from spanscore.offline.agreement import Pair, agreement

    name = name or scorer
    rows = json.loads(run_query(agreement_sql(scorer, name, source, since), "json")).get("data", [])
    if not rows:
        return 1, (
            f"no pairs: no trace in the last {since} has both a spanscore score from scorer {scorer!r} and a "
            f"{source!r} score named {name!r} (looked in table scores; POST /api/v1/scores with "
            f'"name": "{name}", "source": "{source}", or pick --name/--source/--since)\n'
        )
    pairs = [
        Pair(str(r["judge_label"]), str(r["human_label"]), _number(r["judge_score"]), _number(r["human_score"]))
        for r in rows
    ]
    figures = agreement(pairs)
    if output == "json":
        return 0, json.dumps({"scorer": scorer, "name": name, "source": source, **figures.as_dict()}, indent=2) + "\n"
    lines = [
        f"judge {scorer!r} vs {source} {name!r}, last {since}",
        f"pairs: {figures.pairs} ({figures.labelled_pairs} with pass/fail on both sides)",
        f"agreement: {_shown(figures.agreement, percent=True)}",
        f"Cohen's kappa: {_shown(figures.kappa)}",
        f"mean absolute score difference: {_shown(figures.mean_absolute_difference)} ({figures.scored_pairs} pairs)",
    ]
    return 0, "\n".join(lines) + "\n"


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _shown(value: float | None, *, percent: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1%}" if percent else f"{value:.3f}"
