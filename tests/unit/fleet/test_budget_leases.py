"""Budget leases through a real ZooKeeper: however many replicas ask at once, a day's leases fit the limit."""

from __future__ import annotations

import threading

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.fleet.leases import take_lease
from spanscore.sampling.budget import DailyBudget
from tests.zookeeper import ZooKeeperServer


def test_concurrent_leases_never_add_up_to_more_than_the_limit(zookeeper: ZooKeeperServer) -> None:
    hosts = zookeeper.chroot()
    fleets = [Fleet(FleetConfig(keeper=hosts, replica=f"r{i}")) for i in range(3)]
    for fleet in fleets:
        fleet.start()
    try:
        assert all(fleet.wait_joined(15) for fleet in fleets)
        granted: list[float] = []
        lock = threading.Lock()

        def ask(fleet: Fleet) -> None:
            for _ in range(40):
                chunk = take_lease(fleet, "judged", 20_000, 100.0, members=3, minimum=1.0)
                with lock:
                    granted.append(chunk)

        threads = [threading.Thread(target=ask, args=(fleet,)) for fleet in fleets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert abs(sum(granted) - 100.0) < 1e-9  # all of it was leased, and not a cent more
        assert granted.count(0.0) > 0  # late askers were told nothing is left
        assert take_lease(fleets[0], "judged", 20_001, 100.0, members=3, minimum=1.0) > 0  # a new day starts afresh
    finally:
        for fleet in fleets:
            fleet.stop()


def test_a_leased_budget_spends_only_what_it_was_granted() -> None:
    budget = DailyBudget(1000.0)
    budget.use_leases()
    assert budget.exhausted  # nothing granted yet: nothing is spent without Keeper's grant
    budget.grant(250.0, budget.day)
    assert not budget.exhausted
    budget.grant(500.0, budget.day - 1)  # yesterday's lease is dropped
    budget.record_spend(250.0)
    assert budget.exhausted and budget.headroom() == 0.0
