"""Count broken promises from the store (own SQL, read per docs/schema.md) and from the fake judge.

A session's scoring is seen as a `scores` row of its session rule: each write has its own `Version`, and
`Score` (turn_count) with `SpanId` (the latest turn's root) says which turns it covered. The rows are read
without FINAL while the scenario runs, before merges fold them, so every write is seen; two writes of one
session with the same Score and SpanId are a second scoring over the same turns. `scoring_claims` (a
MergeTree, never folded) says which replica claimed each scoring.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

import clickhouse_connect

from bench.fleet_blind.judge import FakeJudge
from bench.fleet_blind.traffic import Turn


def client(port: int) -> Any:
    return clickhouse_connect.get_client(
        host="127.0.0.1", port=port, username="spanscore_owner", password="CHANGE-ME", database="spanscore"
    )


class Watcher:
    """Polls the session rule's score rows (no FINAL) so every write is seen before a merge folds it."""

    def __init__(self, port: int, tag: str) -> None:
        self.port, self.tag = port, tag
        self.writes: set[tuple[str, int, float, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def poll(self) -> None:
        rows = (
            client(self.port)
            .query(
                "SELECT RunId, Version, Score, SpanId FROM scores WHERE Rule = {r:String} AND Target = 'session'",
                parameters={"r": f"sess_{self.tag}"},
            )
            .result_rows
        )
        self.writes.update((str(a), int(b), float(c or 0), str(d)) for a, b, c, d in rows)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.poll()
            except Exception:
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.poll()


def final_scores(port: int, tag: str) -> dict[str, float]:
    rows = (
        client(port)
        .query(
            "SELECT RunId, Score FROM scores FINAL WHERE Rule = {r:String} AND Target = 'session'",
            parameters={"r": f"sess_{tag}"},
        )
        .result_rows
    )
    return {str(a): float(b or 0) for a, b in rows}


def claims(port: int, sessions: list[str]) -> dict[str, list[tuple[float, str]]]:
    rows = (
        client(port)
        .query(
            "SELECT RunId, toUnixTimestamp64Milli(At), Replica FROM scoring_claims "
            "WHERE TraceId = '' AND RunId IN {s:Array(String)} ORDER BY At",
            parameters={"s": sessions},
        )
        .result_rows
    )
    out: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for sid, at, rep in rows:
        out[str(sid)].append((int(at) / 1000, str(rep)))
    return out


def missing_spans(port: int, turns: list[Turn]) -> list[tuple[str, str]]:
    acked = [t for t in turns if t.acked_by]
    if not acked:
        return []
    rows = (
        client(port)
        .query(
            "SELECT TraceId, SpanId FROM otel_traces WHERE TraceId IN {t:Array(String)}",
            parameters={"t": [t.trace for t in acked]},
        )
        .result_rows
    )
    have = {(str(a), str(b)) for a, b in rows}
    return [(t.trace, s) for t in acked for s in t.spans if (t.trace, s) not in have]


def refusals(port: int, tag: str) -> dict[str, int]:
    """Why judged runs were not judged: the Reason of each non-sampled decision, counted."""
    rows = (
        client(port)
        .query(
            "SELECT Decision, Reason, count() FROM score_decisions FINAL "
            "WHERE Rule = {r:String} AND Decision != 'sampled' GROUP BY Decision, Reason",
            parameters={"r": f"judged_{tag}"},
        )
        .result_rows
    )
    return {f"{a}: {b}": int(c) for a, b, c in rows}


def over_budget(port: int, tag: str, turns: list[Turn], call_times: list[float], budget: int) -> dict[str, Any]:
    """Each `over_budget` refusal with what the whole fleet had spent when it was made.

    docs/sampling.md: a run is refused `over_budget` only when the fleet's day is spent (a lost replica's
    holding counts as spent) or Keeper did not answer in time. The fleet's spend at the refusal is the fake
    judge's count of calls that came in before the decision's `Timestamp` (one clock: one machine).
    """
    rows = (
        client(port)
        .query(
            "SELECT RunId, toUnixTimestamp64Milli(Timestamp), Reason FROM score_decisions FINAL "
            "WHERE Rule = {r:String} AND Decision = 'over_budget' ORDER BY Timestamp",
            parameters={"r": f"judged_{tag}"},
        )
        .result_rows
    )
    run_of = {t.root: t.run for t in turns}
    t0 = min((t.acked_at for t in turns if t.acked_at), default=0.0)
    refused: list[dict[str, Any]] = []
    for root, at_ms, reason in rows:
        at = int(at_ms) / 1000
        spent = sum(1 for c in call_times if c <= at)
        refused.append(
            {
                "at": at,
                "run": run_of.get(str(root), str(root)),
                "at_s": round(at - t0, 1),
                "fleet_calls": spent,
                "reason": str(reason),
            }
        )
    left = [r for r in refused if r["fleet_calls"] < budget]
    return {
        "over_budget_refusals": len(refused),
        "over_budget_with_fleet_budget_left": len(left),
        "over_budget_fleet_calls_at_refusal": sorted({r["fleet_calls"] for r in refused}),
        "over_budget_evidence": refused,
    }


def undecided(port: int, tag: str, turns: list[Turn]) -> list[int]:
    """Acknowledged runs with no decision at all for the judged rule: every run is a candidate (an override)."""
    rows = (
        client(port)
        .query(
            "SELECT DISTINCT RunId FROM score_decisions WHERE Rule = {r:String}",
            parameters={"r": f"judged_{tag}"},
        )
        .result_rows
    )
    have = {str(r[0]) for r in rows}
    return sorted(t.run for t in turns if t.acked_by and t.root not in have)


def decisions(port: int, tag: str) -> dict[str, int]:
    rows = (
        client(port)
        .query(
            "SELECT Decision, count() FROM score_decisions FINAL WHERE Rule = {r:String} GROUP BY Decision",
            parameters={"r": f"judged_{tag}"},
        )
        .result_rows
    )
    return {str(a): int(b) for a, b in rows}


def tally(port: int, tag: str, turns: list[Turn], watcher: Watcher, judge: FakeJudge, budget: int) -> dict[str, Any]:
    """Every figure the brief asks for, with the evidence behind each non-zero one."""
    acked = [t for t in turns if t.acked_by]
    sent: dict[str, list[Turn]] = defaultdict(list)
    for t in acked:
        sent[t.session].append(t)
    final = final_scores(port, tag)
    short = {s: (final.get(s), len(ts)) for s, ts in sent.items() if final.get(s) != len(ts)}
    by_cover: dict[tuple[str, float, str], list[int]] = defaultdict(list)
    for sid, version, score, span in watcher.writes:
        by_cover[(sid, score, span)].append(version)
    cl = claims(port, list(sent))
    twice = {
        k[0]: {"turns": k[1], "writes": len(v), "claims": cl.get(k[0], [])} for k, v in by_cover.items() if len(v) > 1
    }
    calls = judge.snapshot()
    tag_runs = {t.run for t in turns}
    per_run: dict[int, list[str]] = defaultdict(list)
    for (rep, run), n in calls.items():
        if run in tag_runs:
            per_run[run] += [rep] * n
    judged_twice = {run: reps for run, reps in per_run.items() if len(reps) > 1}
    per_replica: dict[str, int] = defaultdict(int)
    for reps in per_run.values():
        for rep in reps:
            per_replica[rep] += 1
    return {
        "sessions": len(sent),
        "turns_acked": len(acked),
        "turns_unacked": len(turns) - len(acked),
        "sessions_final_short": len(short),
        "short_evidence": short,
        "sessions_scored_twice_same_turns": len(twice),
        "twice_evidence": twice,
        "session_score_writes": len(watcher.writes),
        "runs_judged_more_than_once": len(judged_twice),
        "judged_twice_evidence": judged_twice,
        "judge_calls": sum(len(r) for r in per_run.values()),
        "judge_calls_per_replica": dict(per_replica),
        "runs_judged": len(per_run),
        "budget_calls": budget,
        "judge_decisions": decisions(port, tag),
        "judge_refusals": refusals(port, tag),
        "acked_spans_missing": len(missing_spans(port, turns)),
        "acked_runs_undecided": undecided(port, tag, turns),
        **over_budget(port, tag, turns, judge.times_of(tag_runs), budget),
    }
