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
from spanscore.sampling.rule_sets import canonical_rules, diff_rules, parse_rules_document, rule_set_version
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.trust import api_rule_problems
from spanscore.server.rule_control import RuleControl

log = logging.getLogger(__name__)

DOCUMENT = "rules"
PUT_WAIT_S = 1.0
"""How long a rule change waits for Keeper's answer before it is refused (503 with Retry-After)."""


class FleetRules:
    def __init__(self, fleet: Fleet, control: RuleControl) -> None:
        self._fleet = fleet
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
        """Once joined: publish our rules if the fleet has none, then follow the fleet's node."""
        while not await asyncio.to_thread(self._fleet.wait_joined, 1.0):
            pass
        data, version = await asyncio.to_thread(self._fleet.read, DOCUMENT)
        if data is None:
            try:
                body = _document(self._control.rule_set.rules, "config", self._fleet.replica)
                await asyncio.to_thread(self._fleet.write, DOCUMENT, body, expected_version=-1)
                log.info("fleet: published this replica's rules as the fleet's first set")
            except VersionConflict:
                pass  # another replica was first: its set arrives through the watch
        await asyncio.to_thread(self._fleet.watch, DOCUMENT, self._changed)

    def _changed(self, data: bytes | None, version: int) -> None:
        """On a Keeper thread: hand the new set to the event loop."""
        if data is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._schedule, data, version)

    def _schedule(self, data: bytes, version: int) -> None:
        task = asyncio.ensure_future(self.apply(data, version))
        self._applying.add(task)
        task.add_done_callback(self._applying.discard)

    async def apply(self, data: bytes, version: int) -> None:
        """Apply one fleet version here (unless it is older than what this replica applied)."""
        if version < self.fleet_version:
            return
        try:
            document = self._decode(data, version)
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
        body = _document(rules, source, self._fleet.replica)
        for _ in range(5):
            try:
                _, version = await asyncio.to_thread(self._fleet.read, DOCUMENT, timeout_s=PUT_WAIT_S)
                written = await asyncio.to_thread(self._fleet.write, DOCUMENT, body, expected_version=version)
                self.fleet_version = max(self.fleet_version, written)
                self._fleet.publish_status(rules_version=_version_of(rules), fleet_version=written)
                log.info("fleet: published rules v%d (%s)", written, source)
                return
            except VersionConflict:
                continue  # another replica published meanwhile: ours is newer, write again on top
            except KeeperUnavailable as exc:
                raise RetryableError(
                    f"rules change refused: {exc}; a fleet changes its rules together (GET /api/v1/rules shows "
                    "the fleet's set; try again when Keeper answers)"
                ) from exc
        raise RetryableError("rules not changed: the fleet's rules kept changing under this write; try again")

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
                published = {"rules": self._decode(data, version)["rules"]}
                found["rules_version"] = _version_of(parse_rules_document(published, source="fleet"))
            except (ConfigError, ValueError) as exc:  # a set this replica would refuse to apply: shown, not a 500
                found["error"] = f"the fleet's rules v{version} are refused here: {exc}"
        found["replicas"] = {
            name: {"rules_version": status.get("rules_version"), "fleet_version": status.get("fleet_version")}
            for name, status in sorted(statuses.items())
        }
        return found


def _document(rules: Sequence[RuleConfig], source: str, replica: str) -> bytes:
    return json.dumps({"rules": canonical_rules(rules), "source": source, "by": replica}).encode()


def _version_of(rules: Sequence[RuleConfig]) -> str:
    return rule_set_version(rules)
