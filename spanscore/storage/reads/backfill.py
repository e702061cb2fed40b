"""What backfill and rule preview read about a rule's past: decisions taken, errors, judge cost per run."""

from __future__ import annotations

from spanscore.storage.clickhouse import ClickHouseStore


def average_judge_cost(store: ClickHouseStore, rule: str, scorers: list[str]) -> float | None:
    """Average judge cost per run from past scores of these scorers; None when there is no history."""
    if not scorers:
        return 0.0
    rows = store.internal_query(
        f"SELECT sum(CostUsd) / greatest(uniqExact(RunId), 1), count() FROM {store.database}.scores FINAL"
        " WHERE Scorer IN {scorers:Array(String)} AND Status = 'ok'",
        {"scorers": scorers},
    )
    if not rows or not rows[0][1] or rows[0][0] is None:  # no scores, or none a price is known for
        return None
    return float(rows[0][0])


def already_decided(store: ClickHouseStore, rule: str) -> set[str]:
    """Runs the rule has decided on (sampled, or found not scorable)."""
    rows = store.internal_query(
        f"SELECT DISTINCT RunId FROM {store.database}.score_decisions FINAL WHERE Rule = {{rule:String}}"
        " AND Decision IN ('sampled', 'missing_input', 'not_applicable')",
        {"rule": rule},
    )
    return {row[0] for row in rows}


def errored_runs(store: ClickHouseStore, rule: str) -> set[str]:
    """Runs with a score of the rule whose latest version ended in an error."""
    rows = store.internal_query(
        f"SELECT DISTINCT RunId FROM {store.database}.scores FINAL WHERE Rule = {{rule:String}} AND Status = 'error'",
        {"rule": rule},
    )
    return {row[0] for row in rows}
