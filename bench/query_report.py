"""Section 5 of ``docs/benchmarks.md``: the hourly score series, from the roll-up and from raw rows.

``query_section`` renders the figures of ``bench.queries.query_benchmark``; ``splice`` puts the
section into an existing report in place of its previous one, for ``python -m bench.run --only
queries``, which re-measures this section alone.
"""

from __future__ import annotations

from typing import Any

HEADING = "## 5. Hourly score series for one scorer over 7 days (roll-up vs raw rows)"
TARGET_MS = 200.0
TARGET_SCORES = 10_000_000
NEXT_HEADING = "## What bounds each figure"


def _ms(query: dict[str, Any]) -> str:
    if query["p50_ms"] is None:
        return f"stopped: {query['error'][:60]}"
    spread = f" ({query['min_ms']:.0f}-{query['max_ms']:.0f})" if len(query["ms"]) > 1 else ""
    return f"{query['p50_ms']:.0f}{spread}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a and b else "-"


def _mb(step: dict[str, Any], *tables: str) -> float:
    return sum(step["tables"].get(table, {}).get("bytes", 0) for table in tables) / 1e6


def _size_row(step: dict[str, Any], label: str) -> str:
    queries = step["queries"]
    hourly = step["tables"].get("scores_1h", {})
    rollup = queries["rollup"]["p50_ms"]
    target = "-"
    if step["scores"] >= TARGET_SCORES and rollup is not None:
        target = f"{'meets' if rollup <= TARGET_MS else 'misses'} (<= {TARGET_MS:.0f} ms)"
    # Per-column sizes exist only for wide parts; small (compact) parts report none.
    states = hourly.get("quantile_state_bytes", 0) / hourly["bytes"] if hourly.get("bytes") else 0.0
    share = f"{states:.0%}" if states else "-"
    return (
        f"| {label} | {step['scorer_scores']:,} | {hourly.get('rows', 0):,} ({hourly.get('parts', 0)}) | {share}"
        f" | {_ms(queries['rollup'])} | {_ms(queries['rollup_no_p50'])} | {_ms(queries['raw'])}"
        f" | {_ms(queries['raw_final'])} | {_ratio(queries['raw']['p50_ms'], rollup)}"
        f" | {'yes' if step['agree'] else '**no**'} | {target} |"
    )


def _growth_rows(steps: list[dict[str, Any]]) -> list[str]:
    base = steps[0]
    rows = [
        "| scores | data | store on disk: scores / roll-ups (MB) | store x | roll-up p50 ms | x "
        "| roll-up without p50 | x | raw p50 ms | x | raw FINAL p50 ms | x | seeding the step (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for step in steps:
        disk = _mb(step, "scores", "scores_1m", "scores_1h")
        p50 = {name: step["queries"][name]["p50_ms"] for name in ("rollup", "rollup_no_p50", "raw", "raw_final")}
        base_p50 = {name: base["queries"][name]["p50_ms"] for name in p50}
        rows.append(
            f"| {step['scores']:,} | {step['scores'] / base['scores']:g}x"
            f" | {_mb(step, 'scores'):,.1f} / {_mb(step, 'scores_1m', 'scores_1h'):,.1f}"
            f" | {_ratio(disk, _mb(base, 'scores', 'scores_1m', 'scores_1h'))}"
            + "".join(f" | {_ms(step['queries'][n])} | {_ratio(p50[n], base_p50[n])}" for n in p50)
            + f" | {step['seed_s']:.1f} |"
        )
    return rows


def _reading(steps: list[dict[str, Any]], merged: dict[str, Any]) -> list[str]:
    """What the figures say, recomputed from them so the sentence stays true when they move."""
    first, last = steps[0], steps[-1]
    full, lean = (last["queries"][name]["p50_ms"] for name in ("rollup", "rollup_no_p50"))
    lean_first = first["queries"]["rollup_no_p50"]["p50_ms"]
    raw_final = last["queries"]["raw_final"]["p50_ms"]
    if None in (full, lean, lean_first, raw_final):
        return []
    growth = last["scores"] / first["scores"]
    return [
        f"Reading: at {last['scores']:,} scores the roll-up query takes {full:.0f} ms, {full - lean:.0f} ms of it for"
        f" the p50 column: merging the per-group quantile states, which grow with the data (up to 8,192 samples"
        f" a group). Without that column the series takes {lean:.0f} ms, {lean / lean_first:.1f}x its time at"
        f" {growth:g}x less data, against {raw_final:.0f} ms for the exact figures from `scores FINAL`. Quantile"
        " states kept per (rule, scorer, hour) only, not per service, agent and model, would merge far fewer states"
        f" than the {merged['tables'].get('scores_1h', {}).get('rows', 0):,} hourly rows here hold (16 per scorer and"
        " hour in this data); that is not measured here.",
        "",
    ]


def query_section(queries: dict[str, Any], conditions: dict[str, str] | None = None) -> list[str]:
    steps = queries["steps"]
    largest = steps[-1]["scores"]
    lines = [
        HEADING,
        "",
        "The store is filled by the engine: `INSERT INTO scores SELECT ... FROM numbers(N)` (see `bench/queries.py`),"
        ' so the materialized views fill `scores_1m` and `scores_1h` as live inserts do; "roll-up == raw" checks',
        "the roll-up's hourly counts against the raw rows. Data: 7 days of scores ending at the run, 8 scorers of",
        "uneven volume, each run by one of 3 rules (sample rates 1, 0.1, 0.05; one judge model per judged rule),",
        "4 services with 2 agents and 2 models each, 10% non-ok statuses; so a scorer has at most 16 roll-up rows",
        "per hour. The store grows in steps (each step adds scores over the same 7 days) and every figure is taken",
        "right after its step's insert, with the parts as the inserts left them; the last row repeats the largest",
        "size after `OPTIMIZE TABLE ... FINAL` of the two roll-ups.",
        "",
        f"Timed: wall time of `ClickHouseStore.query_sync` (the guarded path of `POST /api/v1/query` and `spanscore"
        f" report`, default limits, JSON output, no HTTP), median of {queries['runs']} runs after one warm-up,"
        " (min-max). The roll-up query is `spanscore report trend --scorer faithfulness --since 7d --by hour`"
        ' over `score_trend_hourly`; "without p50" is the same query without its `avg(P50)` column, the only'
        " one that reads the roll-up's quantile states (`QuantilesState`, which holds most of `scores_1h`'s bytes);"
        " the raw queries compute the same columns from `scores` (the exact median instead of the mean of"
        " per-group medians), without and with FINAL. The machine's 2 cores are shared"
        " with other engineers' tests running at the same time, so the figures are noisy: take differences under"
        " about 20% as noise.",
        "",
    ]
    if conditions:
        lines += [
            "Conditions of this section's run: " + "; ".join(f"{key} {value}" for key, value in conditions.items()),
            "",
        ]
    lines += [
        "| scores in the store | faithfulness scores | scores_1h rows (parts) | quantile states, share of scores_1h "
        "| roll-up p50 ms | roll-up without p50 | raw p50 ms | raw FINAL p50 ms | raw / roll-up | roll-up == raw "
        "| target at 10M |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *[_size_row(step, f"{step['scores']:,}") for step in steps],
        _size_row(queries["merged"], f"{largest:,}, roll-ups merged"),
        "",
        *_reading(steps, queries["merged"]),
        "### Cost growth",
        "",
        *_growth_rows(steps),
        "",
    ]
    return lines


def splice(markdown: str, section: list[str], heading: str = HEADING) -> str:
    """``markdown`` with the section under ``heading`` replaced by ``section`` (or put before the bounds section)."""
    text = "\n".join(section).rstrip("\n") + "\n\n"
    if heading in markdown:
        start = markdown.index(heading)
        end = markdown.find("\n## ", start + len(heading))
        return markdown[:start] + text + (markdown[end + 1 :] if end != -1 else "")
    if NEXT_HEADING in markdown:
        start = markdown.index(NEXT_HEADING)
        return markdown[:start] + text + markdown[start:]
    return markdown.rstrip("\n") + "\n\n" + text
