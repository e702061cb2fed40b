"""`python -m bench.fleet_blind dev|held|held2 [scenario...] [--cpu-load N]`: an independent check of #36's promises.

Starts one ZooKeeper, one ClickHouse stand-in (the server code path, deploy/clickhouse's users), one fake
judge, and per scenario three `spanscore serve` replicas; prints one JSON line per scenario and writes them
all to bench/fleet_blind/results-<set>.json. Exit code 1 when any promise was broken. `--cpu-load N` runs N
busy-loop processes through each scenario (the first held run lost turns at load 6-12 on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.fleet_blind.count import Watcher, final_scores, tally
from bench.fleet_blind.judge import FakeJudge
from bench.fleet_blind.load import CpuLoad, Sampler
from bench.fleet_blind.procs import ROOT, Fleet, migrate, wait_for
from bench.fleet_blind.scenarios import SCENARIOS
from bench.fleet_blind.traffic import Sender, schedule
from spanscore.testing import clickhouse_standin
from spanscore.testing.zookeeper import start_zookeeper

HERE = Path(__file__).resolve().parent
BROKEN = (
    "sessions_final_short",
    "sessions_scored_twice_same_turns",
    "runs_judged_more_than_once",
    "acked_spans_missing",
    "acked_runs_undecided",
    "over_budget_with_fleet_budget_left",
)


def settled(port: int, tag: str, sender: Sender) -> bool:
    """Every session with an acknowledged turn has a final score counting all of them."""
    want: dict[str, int] = {}
    for t in sender.turns:
        if t.acked_by:
            want[t.session] = want.get(t.session, 0) + 1
    final = final_scores(port, tag)
    return all(final.get(s) == n for s, n in want.items())


def scenario(
    name: str, p: dict[str, Any], work: Path, store: int, zk: int, judge: FakeJudge, first: int, cpu_load: int
) -> dict[str, Any]:
    tag = f"{p['name']}_{name}"
    plan = schedule(p, tag)
    budget = int(len(plan) * 1.5)
    fleet = Fleet(work / tag, store, zk, judge, tag, float(p["session_timeout_s"]), budget)
    (work / tag).mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    busy = CpuLoad(cpu_load)
    sampler: Sampler | None = None
    try:
        fleet.start(["r1", "r2", "r3"])
        sampler = Sampler(fleet)
        watcher = Watcher(store, tag)
        sender = Sender(fleet, first)
        t0 = time.monotonic()
        thread = threading.Thread(target=sender.run, args=(plan, t0))
        thread.start()
        time.sleep(max(0.0, t0 + float(p["fault_at_s"]) - time.monotonic()))
        fault = [time.time()]
        SCENARIOS[name](fleet, p)
        fault.append(time.time())
        thread.join(300)
        # one more turn for half the sessions once the fault is over, so joined and replacing replicas get
        # traffic too and a session continued after the fault must be scored again with all its turns
        after = [(0.3 * i, s, 0) for i, s in enumerate(sorted({s for _, s, _ in plan}))][::2]
        sender.run(after, time.monotonic())
        try:
            wait_for("every session scored with all its turns", lambda: settled(store, tag, sender), 120, 1.0)
            result_settled = True
        except TimeoutError:
            result_settled = False
        time.sleep(4 * float(p["session_timeout_s"]) + 4)  # room for a late second scoring to show
        watcher.stop()
        out = tally(store, tag, sender.turns, watcher, judge, budget)
        out.update(sampler.stop(), cpu_load=cpu_load)
        for refusal in out["over_budget_evidence"]:
            refusal["keeper_budget_before"] = sampler.budget_at(refusal["at"])
            refusal["s_after_fault_began"] = round(refusal["at"] - fault[0], 1)
        out["fault_wall_clock"] = fault
        out["judged_twice_calls_s_after_fault"] = {
            run: [(round(t - fault[0], 2), rep) for t, rep, r in judge.times if r == int(run)]
            for run in out["judged_twice_evidence"]
        }
        out.update(scenario=name, set=p["name"], settled=result_settled, seconds=round(time.monotonic() - began, 1))
        out["load_avg"] = [round(x, 1) for x in os.getloadavg()]
        out["turns_by_replica"] = {r.name: sum(t.acked_by == r.name for t in sender.turns) for r in fleet.replicas}
        return out
    finally:
        if sampler is not None:
            sampler.stop()
        fleet.shutdown()
        busy.stop()


def fresh_store(work: Path) -> tuple[Any, int]:
    """A stand-in store of the scenario's own, migrated once as the owner.

    One store for every scenario does not work: a fleet on a new Keeper path publishes the newest rule set
    the store recorded, whichever fleet recorded it (seen in the first dev run; RESULTS.md).
    """
    users = [str(ROOT / "deploy/clickhouse/owner-user.sql"), str(ROOT / "deploy/clickhouse/query-user.sql")]
    work.mkdir(parents=True, exist_ok=True)
    proc, port = clickhouse_standin.spawn(str(work / "store"), *users)
    migrate(work, port)
    return proc, port


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fleet_blind")
    ap.add_argument("set", help="a parameter file's name in bench/fleet_blind: dev, held, held2")
    ap.add_argument("scenarios", nargs="*", help=f"default: all six ({', '.join(SCENARIOS)})")
    ap.add_argument("--cpu-load", type=int, default=0, help="busy-loop processes through each scenario")
    ap.add_argument("--out", default="", help="results file (default bench/fleet_blind/results-<set>.json)")
    args = ap.parse_args(argv)
    unknown = [n for n in args.scenarios if n not in SCENARIOS]
    if unknown:
        ap.error(f"no scenario named {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    if not (HERE / f"{args.set}.json").is_file():
        ap.error(f"no parameter file bench/fleet_blind/{args.set}.json")
    params = json.loads((HERE / f"{args.set}.json").read_text())
    names = args.scenarios or list(SCENARIOS)
    out = HERE / (args.out or f"results-{params['name']}.json")
    work = Path(tempfile.mkdtemp(prefix=f"fleet_blind_{params['name']}_"))
    print(f"workdir {work}", file=sys.stderr, flush=True)
    zk = start_zookeeper(work / "zk")
    zk_port = int(zk.hosts.split(",")[0].rsplit(":", 1)[1].split("/")[0])
    judge = FakeJudge()
    results = []
    try:
        for i, name in enumerate(names):
            proc, store = fresh_store(work / f"{params['name']}_{name}")
            try:
                res = scenario(name, params, work, store, zk_port, judge, 1000 * (i + 1), args.cpu_load)
            finally:
                clickhouse_standin.stop(proc)
            print(json.dumps(res), flush=True)
            results.append(res)
            out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        judge.stop()
        zk.stop()
    print(f"workdir {work}", file=sys.stderr)
    return 1 if any(r[k] for r in results for k in BROKEN) or not all(r["settled"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
