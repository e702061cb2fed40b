"""``spanscore rules show``, ``rules apply FILE`` and ``rules diff FILE``: live rules through the API.

FILE is either a whole config file (its ``rules:`` are used, the rest is ignored) or a file holding only
``rules:``. Both commands validate FILE locally first, so a typo is reported before anything is sent.

Exit codes: ``apply`` 0 when the service runs the file's rules (changed or already identical), 1 when the
service refused them or cannot be reached, 2 when FILE itself is invalid. ``diff`` 0 when the rules are the
same, 1 when they differ (the differences are printed), 2 when FILE is invalid or the service cannot be reached.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from spanscore.errors import ConfigError, SpanscoreError
from spanscore.printable import printable, say
from spanscore.sampling.rule_sets import canonical_rules, diff_rules, parse_rules_document, rule_set_version

CallApi = Callable[..., bytes | None]
"""``_call_api(path, payload, timeout, method=...)`` of the command line, bound to its config."""


def run(command: str, file: str, call_api: CallApi, no_service: str) -> int:
    """``rules show``, ``rules apply|diff FILE`` against the service; ``no_service`` says where it looked."""
    if command == "show":
        return _show(call_api, no_service)
    try:
        rules = read_rules(file)
    except ConfigError as exc:
        print(f"spanscore: {exc}", file=sys.stderr)
        return 2
    if command == "apply":
        return _apply(rules, call_api, no_service)
    return _diff(rules, call_api, no_service)


def read_rules(file: str) -> list[dict[str, Any]]:
    """The file's rules in canonical form, validated; only ``rules:`` is read from a whole config file."""
    path = Path(file)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(document, dict) or "rules" not in document:
        raise ConfigError(f"{file}: no rules: list found (a config file or a file with only rules:)")
    if document.get("judge"):
        print(
            f"spanscore: note: {printable(file)}'s judge: section is not sent: a running service judges with the "
            "judge of the config file it was started with (add it there and restart; docs/judge.md)",
            file=sys.stderr,
        )
    return canonical_rules(parse_rules_document({"rules": document["rules"]}, source=file))


def _apply(rules: list[dict[str, Any]], call_api: CallApi, no_service: str) -> int:
    try:
        body = call_api("rules", {"rules": rules}, 60, method="PUT")
    except SpanscoreError as exc:
        print(f"spanscore: the service refused the rules, nothing changed:\n  {exc}", file=sys.stderr)
        return 1
    if body is None:
        print(f"spanscore: {no_service}; nothing was applied", file=sys.stderr)
        return 1
    answer = json.loads(body)
    state = "applied" if answer.get("changed") else "already running these rules"
    print(f"{state}: version {answer['version']} (generation {answer['generation']}, {len(answer['rules'])} rules)")
    return 0


def _running(call_api: CallApi, no_service: str) -> dict[str, Any] | None:
    """The service's rules answer (``GET /api/v1/rules``), or None after saying why there is none."""
    try:
        body = call_api("rules", None, 30)
    except SpanscoreError as exc:
        print(f"spanscore: cannot read the service's rules: {exc}", file=sys.stderr)
        return None
    if body is None:
        print(f"spanscore: {no_service}", file=sys.stderr)
        return None
    answer: dict[str, Any] = json.loads(body)
    return answer


def _diff(rules: list[dict[str, Any]], call_api: CallApi, no_service: str) -> int:
    running = _running(call_api, f"{no_service}; nothing to compare with")
    if running is None:
        return 2
    _fleet_note(running)
    change = diff_rules(running["rules"], rules)
    if change.empty:
        print(f"same rules as the service (version {running['version']})")
        return 0
    print(f"service version {running['version']} -> file version {_version_of(rules)}")
    before = {str(rule["name"]): rule for rule in running["rules"]}
    after = {str(rule["name"]): rule for rule in rules}
    for line in change.lines():
        name = line[2:]
        if line.startswith("~ ") and name in before and name in after:
            fields = sorted(
                key for key in {*before[name], *after[name]} if before[name].get(key) != after[name].get(key)
            )
            line += f"  ({', '.join(fields)})"
            for field in fields:
                line += f"\n    {field}: {json.dumps(before[name].get(field))} -> {json.dumps(after[name].get(field))}"
        print(line)
    return 1


def _show(call_api: CallApi, no_service: str) -> int:
    """The running rules as a YAML document ``rules apply`` takes back, headed by their version."""
    running = _running(call_api, no_service)
    if running is None:
        return 1
    _fleet_note(running, prefix="# ")
    print(f"# rules version {running['version']} (generation {running['generation']}), as the service runs them")
    print(yaml.safe_dump({"rules": running["rules"]}, sort_keys=False, allow_unicode=True), end="")
    return 0


def _fleet_note(running: dict[str, Any], *, prefix: str = "") -> None:
    """In a fleet: the fleet's version and every replica that does not run it (the diff is against the fleet)."""
    fleet = running.get("fleet")
    if not isinstance(fleet, dict):
        return
    if fleet.get("error"):
        say(f"{prefix}fleet: {fleet['error']}; compared with this replica's rules only")
        return
    wanted = fleet.get("rules_version")
    replicas = fleet.get("replicas") or {}
    say(f"{prefix}fleet rules v{fleet.get('version')} ({wanted}) on {len(replicas)} replicas")
    for name, applied in sorted(replicas.items()):
        if applied.get("rules_version") != wanted:
            say(f"{prefix}  replica {name} runs {applied.get('rules_version')}, not the fleet's (see its log)")
    if running.get("version") != wanted:
        say(f"{prefix}  the replica answering runs {running.get('version')}, not the fleet's")


def _version_of(rules: list[dict[str, Any]]) -> str:
    return rule_set_version(parse_rules_document({"rules": rules}, source="file"))
