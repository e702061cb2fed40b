"""Machine load for a scenario, and what the replicas said about their fleet state while it ran.

The first held run lost a session's turns at load 6-12 while the team's own runs were at load 1-3, so a
scenario can add busy processes (`--cpu-load N`) to reach the load where the loss was seen. Each busy loop
is a child process bounded in time on its own, stopped by its PID when the scenario ends (SIGKILL if it
does not go), so nothing outlives the run even when the harness itself is killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any

from kazoo.client import KazooClient

from bench.fleet_blind.procs import Fleet

BUSY = "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"
FLEET_METRICS = (
    "spanscore_fleet_keeper_connected",
    "spanscore_fleet_members",
    "spanscore_fleet_budget_leases_taken_total",
    "spanscore_fleet_budget_burst_leases_total",
    "spanscore_fleet_budget_local_share",
    "spanscore_fleet_session_losses_total",
    "spanscore_fleet_sessions_taken_over_total",
    "spanscore_fleet_sessions_skipped_as_scored_total",
    "spanscore_fleet_sessions_fenced_total",
    "spanscore_fleet_runs_fenced_total",
    "spanscore_fleet_claim_races_lost_total",
    "spanscore_fleet_claimed_runs_taken_up_total",
    "spanscore_fleet_orphan_traces_taken_total",
)


class CpuLoad:
    """`n` busy-loop processes, each ending by itself after `limit_s`."""

    def __init__(self, n: int, limit_s: float = 900.0) -> None:
        code = BUSY.format(limit=float(limit_s))
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


def scrape(api_port: int) -> dict[str, float]:
    """The fleet's own figures from one replica's /metrics (summed over labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/metrics", timeout=2) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in FLEET_METRICS:
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def keeper_budget(zk: KazooClient, root: str) -> dict[str, str]:
    """Every node under the fleet's path whose path names a budget or lease, with its data."""
    out: dict[str, str] = {}
    stack = [root]
    while stack:
        path = stack.pop()
        for child in zk.get_children(path):
            full = f"{path}/{child}"
            stack.append(full)
            if "budget" in full.lower() or "lease" in full.lower():
                out[full[len(root) :]] = zk.get(full)[0].decode("utf-8", "replace")
    return out


class Sampler:
    """Every 2 s: the 1-minute load average, each reachable replica's fleet metrics (the last seen kept), and
    the fleet's budget nodes as Keeper holds them (read straight from ZooKeeper, past the relays; each change
    kept with its time, so a refusal can be set against what the fleet had leased and spent then).

    A killed replica's metrics are gone with it, so the last scrape before the kill is what is reported.
    """

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.budget_history: list[tuple[float, str, str]] = []
        self._budget_last: dict[str, str] = {}
        self._zk = KazooClient(hosts=f"127.0.0.1:{fleet.zk_port}", timeout=5)
        self._zk.start(10)
        self.loads: list[float] = []
        self.metrics: dict[str, dict[str, float]] = {}
        self.local_share_seen: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _budget(self) -> None:
        try:
            nodes = keeper_budget(self._zk, f"/blind/{self.fleet.tag}")
        except Exception:
            return
        for path, data in sorted(nodes.items()):
            if self._budget_last.get(path) != data:
                self._budget_last[path] = data
                self.budget_history.append((time.time(), path, data))

    def _once(self) -> None:
        self.loads.append(os.getloadavg()[0])
        self._budget()
        for rep in list(self.fleet.replicas):
            if not rep.alive():
                continue
            try:
                m = scrape(rep.api)
            except Exception:
                continue
            self.metrics[rep.name] = m
            if m.get("spanscore_fleet_budget_local_share"):
                self.local_share_seen[rep.name] = self.local_share_seen.get(rep.name, 0) + 1

    def _loop(self) -> None:
        while not self._stop.wait(2.0):
            self._once()

    def budget_at(self, at: float) -> dict[str, str]:
        """The budget nodes as last read at or before `at` (wall clock)."""
        state: dict[str, str] = {}
        for t, path, data in self.budget_history:
            if t <= at:
                state[path] = data
        return state

    def stop(self) -> dict[str, Any]:
        if self._stop.is_set():
            return {}
        self._stop.set()
        self._thread.join(15)
        self._once()
        self._zk.stop()
        self._zk.close()
        loads = self.loads or [0.0]
        return {
            "load_1m_max": round(max(loads), 1),
            "load_1m_mean": round(sum(loads) / len(loads), 1),
            "fleet_metrics": self.metrics,
            "local_share_samples": self.local_share_seen,
            "keeper_budget_history": self.budget_history,
        }
