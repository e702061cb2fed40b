"""The six faults, each applied mid-traffic to a fresh fleet of three replicas."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

from bench.fleet_blind.procs import Fleet

Fault = Callable[[Fleet, dict[str, float]], None]


def kill9(fleet: Fleet, p: dict[str, float]) -> None:
    rep = fleet.by_name("r2")
    rep.signal(signal.SIGKILL)
    assert rep.proc is not None
    rep.proc.wait(30)


def sigstop(fleet: Fleet, p: dict[str, float]) -> None:
    rep = fleet.by_name("r2")
    rep.signal(signal.SIGSTOP)
    time.sleep(p["pause_s"])  # the fault's length, not a wait for a condition
    rep.signal(signal.SIGCONT)


def keeper_cut(fleet: Fleet, p: dict[str, float]) -> None:
    relay = fleet.by_name("r2").relay
    relay.set_cut()
    time.sleep(p["cut_s"])
    relay.heal()


def join(fleet: Fleet, p: dict[str, float]) -> None:
    fleet.start(["r4"])


def rolling(fleet: Fleet, p: dict[str, float]) -> None:
    """New name up and ready, then SIGTERM the old one and wait for it to leave; one at a time."""
    for old in ("r1", "r2", "r3"):
        fleet.start([f"{old}b"])
        rep = fleet.by_name(old)
        rep.stopped = True
        rep.signal(signal.SIGTERM)
        assert rep.proc is not None
        rep.proc.wait(120)


def keeper_all(fleet: Fleet, p: dict[str, float]) -> None:
    for rep in fleet.replicas:
        rep.relay.set_cut()
    time.sleep(p["all_cut_s"])
    for rep in fleet.replicas:
        rep.relay.heal()


SCENARIOS: dict[str, Fault] = {
    "kill9": kill9,
    "sigstop": sigstop,
    "keeper_cut": keeper_cut,
    "join": join,
    "rolling": rolling,
    "keeper_all": keeper_all,
}
