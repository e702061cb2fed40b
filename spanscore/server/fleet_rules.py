"""One versioned rule set for a fleet: a PUT or SIGHUP on any replica publishes it, every replica applies it.

The set lives in one Keeper node (``<fleet.path>/rules``) as JSON, written with compare-and-set; its node
version is the fleet version. Every replica watches the node and applies each new version through the same
checks as a PUT (``RuleControl.apply_rules``), including the trust check: a published set may name only the
import-path scorers this replica's own config file names. Each replica puts the version it applied on its
member node, so ``GET /api/v1/rules`` on any replica shows the fleet version and every replica's.

The first replica of a new fleet publishes the rules of its config file; later replicas take up the fleet's
set, and say so (a WARNING, ``fleet_rules_replace_file`` and ``spanscore status``) when their file
differs. While Keeper is unreachable (or silent for ``PUT_WAIT_S``) a PUT is refused (503 with Retry-After)
and changes nothing: a change only this replica made would be a fleet that disagrees with itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from spanscore.errors import ConfigError, RetryableError
from spanscore.fleet.coordinator import Fleet, KeeperUnavailable, VersionConflict
from spanscore.fleet.documents import MalformedNode, decode_rules
from spanscore.fleet.keeper_thread import keeper_call
from spanscore.sampling.rule_sets import canonical_rules, diff_rules, parse_rules_document, rule_set_version
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.trust import api_rule_problems
from spanscore.server.rule_control import RuleControl
from spanscore.storage.fleet_records import Store, newest_rule_set, record_rule_set

log = logging.getLogger(__name__)

DOCUMENT = "rules"
PUT_WAIT_S = 1.0
"""How long a rule change waits for Keeper's answer before it is refused (503 with Retry-After)."""


class FleetRules:
    def __init__(self, fleet: Fleet, control: RuleControl, store: Store) -> None:
        self._fleet = fleet
        self._store = store
        self._control = control
        self.fleet_version = -1
        """The node version last applied here (-1: none yet)."""
        self.apply_failures = 0
        self.malformed = 0
        """Published nodes refused because their bytes are not a rule set (shown by ``describe``, counted)."""
        self.malformed_reason = ""
        self.file_rules_replaced = ""
        """Set when the fleet's set replaced this replica's config-file rules: from where, and what differs."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._applying: set[asyncio.Task[None]] = set()
        control.publisher = self

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._attach(), name="fleet-rules")

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.gather(*self._applying, return_exceptions=True)

    async def _attach(self) -> None:
        """On every join (a new session too): see that the fleet has a set, and follow the fleet's node."""
        watching = False
        while True:
            while not await asyncio.to_thread(self._fleet.wait_joined, 1.0):
                pass
            losses = self._fleet.session_losses
            try:
                await self._ensure_published()
                if not watching:
                    await keeper_call(lambda: self._fleet.watch(DOCUMENT, self._changed), "fleet-rules-watch")
                    watching = True
            except Exception as exc:  # Keeper or the store went away meanwhile: the next join tries again
                log.warning("fleet: rule set not checked on joining (%s); trying again", exc)
                await asyncio.sleep(1.0)
                continue
            # A new session may be a Keeper that lost its data. Sessions change on a Keeper thread: polled.
            while self._fleet.session_losses == losses:  # noqa: ASYNC110
                await asyncio.sleep(0.5)

    async def _ensure_published(self) -> None:
        """A fleet without a set gets the newest set the store recorded, or (a new fleet) this replica's rules.

        So a Keeper that lost its data gets the fleet's rules back, not a config file over rules changed
        through the API.
        """
        data, _ = await keeper_call(lambda: self._fleet.read(DOCUMENT), "fleet-rules-read")
        if data is not None:
            return
        recorded = await asyncio.to_thread(newest_rule_set, self._store)
        if recorded is not None and recorded[0] >= self.fleet_version:
            generation, body = recorded
            source = f"the store's record of the fleet's newest set (generation {generation})"
        else:  # a new fleet, or this replica applied a set newer than the store recorded (its record failed)
            generation = self.fleet_version + 1 if self.fleet_version < 0 else self.fleet_version
            running = self._control.rule_set
            body = _document(running.rules, running.source, self._fleet.replica, generation)
            source = f"this replica's rules (generation {generation})"
            recorded = None
        try:
            await keeper_call(lambda: self._fleet.write(DOCUMENT, body, expected_version=-1), "fleet-rules-write")
        except VersionConflict:
            return  # another replica was first: its set arrives through the watch
        if recorded is None:
            await self._record(generation, body)
        lost = recorded is not None or self.fleet_version >= 0  # a set existed: Keeper lost it
        log.log(logging.WARNING if lost else logging.INFO, "fleet: Keeper held no rule set; published %s", source)

    def _changed(self, data: bytes | None, version: int) -> None:
        """On a Keeper thread: hand the new set to the event loop."""
        if data is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._schedule, data, version)

    def _schedule(self, data: bytes, version: int) -> None:
        task = asyncio.ensure_future(self.apply(data, version))
        self._applying.add(task)
        task.add_done_callback(self._applying.discard)

    async def apply(self, data: bytes, node_version: int) -> None:
        """Apply one fleet version here (unless it is older than what this replica applied)."""
        version = node_version
        try:
            document = self._decode(data, node_version)
            version = _generation(document, node_version)
            if version < self.fleet_version:
                return
            refused = api_rule_problems({"rules": document.get("rules")}, self._control.operator_scorer_paths)
            if refused:
                raise ConfigError("; ".join(refused))
            rules = parse_rules_document({"rules": document.get("rules")}, source=f"fleet rules v{version}")
            if canonical_rules(rules) != canonical_rules(self._control.rule_set.rules):
                by = document.get("by", "?")
                source = f"fleet v{version} from {by} ({document.get('source', '?')})"
                if self._control.rule_set.source == "config":
                    self._say_file_replaced(rules, source)
                await self._control.apply_rules(rules, source=source, publish=False)
            self.fleet_version = max(self.fleet_version, version)
        except (ConfigError, ValueError, AttributeError) as exc:
            self.apply_failures += 1
            log.error("fleet: rules v%d not applied here, the running rules stay: %s", version, exc)
        self._fleet.publish_status(rules_version=self._control.rule_set.version, fleet_version=self.fleet_version)

    async def publish(self, rules: list[RuleConfig], source: str) -> None:
        """Make ``rules`` the fleet's set (the newest writer wins); ``RetryableError`` without Keeper."""
        for _ in range(5):
            try:
                data, version = await asyncio.to_thread(self._fleet.read, DOCUMENT, timeout_s=PUT_WAIT_S)
                generation = max(self._generation_of(data, version), self.fleet_version) + 1
                body = _document(rules, source, self._fleet.replica, generation)
                await asyncio.to_thread(self._fleet.write, DOCUMENT, body, expected_version=version)
                self.fleet_version = max(self.fleet_version, generation)
                self._fleet.publish_status(rules_version=_version_of(rules), fleet_version=generation)
                log.info("fleet: published rules v%d (%s)", generation, source)
                await self._record(generation, body)
                return
            except VersionConflict:
                continue  # another replica published meanwhile: ours is newer, write again on top
            except KeeperUnavailable as exc:
                raise RetryableError(
                    f"rules change refused: {exc}; a fleet changes its rules together (GET /api/v1/rules shows "
                    "the fleet's set; try again when Keeper answers)"
                ) from exc
        raise RetryableError("rules not changed: the fleet's rules kept changing under this write; try again")

    def _generation_of(self, data: bytes | None, version: int) -> int:
        """The generation of the node's set (-1: no set; a malformed node counts as its node version)."""
        if data is None:
            return -1
        try:
            return _generation(decode_rules(data, self._fleet.node(DOCUMENT)), version)
        except MalformedNode:
            return version

    async def _record(self, generation: int, body: bytes) -> None:
        """Keep the published set in the store: what a Keeper that lost its data is given back."""
        try:
            await asyncio.to_thread(record_rule_set, self._store, generation, self._fleet.replica, body)
        except Exception as exc:
            log.warning("fleet: rules v%d published but not recorded in the store (%s)", generation, exc)

    def _say_file_replaced(self, rules: list[RuleConfig], source: str) -> None:
        """The config file's rules are not the ones that run: a WARNING, and ``status`` shows it from now on."""
        change = diff_rules(canonical_rules(self._control.rule_set.rules), canonical_rules(rules))
        self.file_rules_replaced = f"{source}: {'; '.join(change.lines()) or 'same rules, other settings'}"
        log.warning(
            "fleet: this config file's rules are replaced by the fleet's published set, %s; the file's rules do "
            "not run here (change the fleet's with PUT /api/v1/rules or SIGHUP on any replica)",
            self.file_rules_replaced,
        )

    def _decode(self, data: bytes, version: int) -> dict[str, Any]:
        """The published document, or ``MalformedNode`` (counted once per version, and remembered for status)."""
        try:
            return decode_rules(data, self._fleet.node(DOCUMENT))
        except MalformedNode as exc:
            if self.malformed_reason != f"v{version}: {exc}":
                self.malformed += 1
                self.malformed_reason = f"v{version}: {exc}"
            raise

    def describe(self) -> dict[str, Any]:
        """The fleet block of ``GET /api/v1/rules``: the fleet version and what each replica applied."""
        found: dict[str, Any] = {"version": self.fleet_version, "replica": self._fleet.replica, "replicas": {}}
        try:
            statuses = self._fleet.statuses()
            data, version = self._fleet.read(DOCUMENT)
        except KeeperUnavailable as exc:
            found["error"] = str(exc)
            return found
        found["version"] = version
        if data is not None:
            try:
                document = self._decode(data, version)
                found["version"] = _generation(document, version)
                published = {"rules": document["rules"]}
                found["rules_version"] = _version_of(parse_rules_document(published, source="fleet"))
            except (ConfigError, ValueError) as exc:  # a set this replica would refuse to apply: shown, not a 500
                found["error"] = f"the fleet's rules v{version} are refused here: {exc}"
        found["replicas"] = {
            name: {"rules_version": status.get("rules_version"), "fleet_version": status.get("fleet_version")}
            for name, status in sorted(statuses.items())
        }
        return found


def _document(rules: Sequence[RuleConfig], source: str, replica: str, generation: int) -> bytes:
    body = {"rules": canonical_rules(rules), "source": source, "by": replica, "generation": generation}
    return json.dumps(body).encode()


def _generation(document: dict[str, Any], node_version: int) -> int:
    """The fleet version: the set's own generation, which outlives Keeper's node versions.

    A node written again after Keeper lost its data starts at version 0; a set written before generations
    has only its node version.
    """
    generation = document.get("generation")
    return generation if isinstance(generation, int) and generation >= 0 else node_version


def _version_of(rules: Sequence[RuleConfig]) -> str:
    return rule_set_version(rules)
