"""`python -m bench.fleet_blind.report results-<set>.json`: the RESULTS.md table of one run, and its evidence.

Written so that the table in RESULTS.md is the results file's, not copied by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HEAD = (
    "| scenario | short | twice | judged>1 | calls/budget (per replica) | over_budget (budget left) | fleet calls at"
    " refusals | acked missing | undecided | settled | s | load max/mean (busy) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(r: dict[str, Any]) -> str:
    per = ", ".join(f"{k} {v}" for k, v in sorted(r["judge_calls_per_replica"].items()))
    return (
        f"| {r['scenario']} | {r['sessions_final_short']}/{r['sessions']} | {r['sessions_scored_twice_same_turns']}"
        f" | {r['runs_judged_more_than_once']} | {r['judge_calls']}/{r['budget_calls']} ({per})"
        f" | {r.get('over_budget_refusals', '?')} ({r.get('over_budget_with_fleet_budget_left', '?')})"
        f" | {r.get('over_budget_fleet_calls_at_refusal', '?')} | {r['acked_spans_missing']}"
        f" | {len(r.get('acked_runs_undecided', []))} | {r['settled']} | {r['seconds']}"
        f" | {r.get('load_1m_max', '?')}/{r.get('load_1m_mean', '?')} ({r.get('cpu_load', 0)}) |"
    )


def evidence(r: dict[str, Any]) -> list[str]:
    out = []
    for sid, (final, acked) in r["short_evidence"].items():
        out.append(f"- {r['scenario']}: session `{sid}` final score {final} turns of {acked} acknowledged")
    for sid, ev in r["twice_evidence"].items():
        out.append(
            f"- {r['scenario']}: session `{sid}` scored {ev['writes']}x over {ev['turns']} turns; claims {ev['claims']}"
        )
    for run, reps in r["judged_twice_evidence"].items():
        out.append(f"- {r['scenario']}: run {run} judged by {reps}")
    for ref in r.get("over_budget_evidence", []):
        budget = {k: json.loads(v) for k, v in ref.get("keeper_budget_before", {}).items() if v}
        held = {k: (v.get("holders"), v.get("gone")) for k, v in budget.items()}
        out.append(
            f"- {r['scenario']}: run {ref['run']} refused at +{ref['at_s']} s with {ref['fleet_calls']} fleet calls"
            f' made: "{ref["reason"]}"; Keeper\'s budget node then (holder: [spent, unspent], gone): {held}'
        )
    return out


def main(argv: list[str]) -> int:
    results = json.loads((HERE / argv[0]).read_text())
    print(HEAD)
    for r in results:
        print(row(r))
    print()
    for r in results:
        print("\n".join(evidence(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
