"""What fleet mode adds to a service: its Keeper membership, the shared rule set, and its live-scoring part.

Built only when the config has a ``fleet:`` section; the single process has none of it. Start order: Keeper
first (in the background: ingest never waits for it), then the rules and the live-scoring member; on
shutdown, once its listeners and span writers drained, the member hands its unready runs over and the
replica leaves, so its new owners take its runs and sessions up from the store at once.
"""

from __future__ import annotations

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.scoring.fleet_member import FleetMember
from spanscore.scoring.live import LiveScoring
from spanscore.server.fleet_presence import WINDOW_BEATS, FleetPresence, shared_store
from spanscore.server.fleet_rules import FleetRules
from spanscore.server.rule_control import RuleControl
from spanscore.storage.fleet_records import Store


class FleetParts:
    def __init__(self, config: FleetConfig, rule_control: RuleControl, store: Store) -> None:
        self.config = config
        self.fleet = Fleet(config)
        self.rules = FleetRules(self.fleet, rule_control, store)
        self.member: FleetMember | None = None
        self.presence = FleetPresence(self.fleet, store, interval_s=max(1.0, config.session_timeout_s / 2))
        self._started = False

    async def attach(self, live: LiveScoring) -> None:
        """Live scoring exists (at start, or with the first rules): its sessions and caps join the fleet."""
        if self.member is not None:
            return
        presence = self.presence
        window = WINDOW_BEATS * presence.interval_s
        self.member = FleetMember(live, self.fleet, self.config, instance=presence.instance, alive_window_s=window)
        if self._started:
            await self.member.start()

    async def start(self) -> None:
        self.fleet.start()
        self.presence.start()
        await self.rules.start()
        if self.member is not None:
            await self.member.start()
        self._started = True

    async def shutdown(self) -> None:
        """Hand over (with live scoring) and leave: new owners take this replica's work up from the store."""
        if self.member is not None:
            await self.member.hand_over()
        await self.rules.shutdown()
        await self.presence.stop()

    def leave(self) -> None:
        """Leave the fleet (the member node goes at once, so the others take over without waiting)."""
        if self.fleet.state != "stopped":
            if self.member is not None:
                self.member.budgets.release_all()  # after scoring drained: every spend is stored by now
            self.fleet.stop()

    def degraded(self) -> list[str]:
        """What is off while this replica is not a full member (empty: nothing is); the first line says why.

        /healthz and ``spanscore status`` show these; /readyz also, with ``readiness``'s answer.
        """
        store = self.presence.store_problem()
        if self.presence.others:
            store = f"{store}; {shared_store(self.presence.others)}" if store else shared_store(self.presence.others)
        if self.fleet.joined:
            return [f"degraded: {store}"] if store else []
        if self.fleet.refused is not None:
            lines = [
                f"degraded: not a member of the fleet: {self.fleet.refused}",
                "scores no session, leads nothing, leases nothing: give each replica its own fleet.replica",
            ]
        elif self.fleet.connected:
            lines = [
                "degraded: connected to Keeper, not a member of the fleet yet (joining: the log says what holds it)",
                "owns no session and leads nothing until it joins",
            ]
        else:
            local = self.member is not None and self.member.local_share
            lines = [
                f"degraded: Keeper unreachable ({self.fleet.state})",
                "no leader here: alerts are not evaluated or sent by this replica",
                "budgets on the local share (1/fleet.expected_replicas of what the fleet had left today)"
                if local
                else "budgets: only leases already held are spent (local share after fleet.session_timeout_s)",
                "rules frozen: changes are refused (503) until Keeper answers",
                "session owners as last seen",
            ]
        return [*lines, store] if store else lines

    def readiness(self) -> tuple[bool, list[str]]:
        """(in rotation, what is off): a replica that is not a member leaves the rotation only if others are.

        ``fleet_presence`` says why: when Keeper is gone for every replica, all stay in rotation so that
        ingest goes on; a replica that cannot tell (the store silent too) stays as well.
        """
        off = self.degraded()
        if self.fleet.joined:
            return True, off
        peers = self.presence.peers_with_keeper()
        if peers:
            return False, [*off, f"out of rotation: {len(peers)} other replica(s) have Keeper ({', '.join(peers)})"]
        why = "the store did not answer either" if peers is None else "Keeper seems down for the whole fleet"
        return True, [*off, f"in rotation: no other replica reported Keeper to the store lately ({why})"]

    def metrics(self) -> dict[str, float]:
        found = self.fleet.metrics()
        found["fleet_rules_version"] = float(self.rules.fleet_version)
        found["fleet_rules_apply_failures"] = float(self.rules.apply_failures)
        found["fleet_rules_malformed"] = float(self.rules.malformed)
        found["fleet_rules_replace_file"] = 1.0 if self.rules.file_rules_replaced else 0.0
        found["fleet_joined"] = 1.0 if self.fleet.joined else 0.0
        found["fleet_in_rotation"] = 1.0 if self.readiness()[0] else 0.0
        found["fleet_store_heartbeat_failing"] = 0.0 if self.presence.store_problem() is None else 1.0
        found["fleet_other_fleets_in_store"] = float(len(self.presence.others))
        if self.member is not None:
            found.update(self.member.metrics())
        return found
