"""``spanscore config check --keeper``: would a replica started with this config find its fleet, and agree?

Connects to ``fleet.keeper`` without joining and reports the live replicas, the leader, each replica's
applied rule version and whether this file's rules are the fleet's published set. Exit 1 when Keeper cannot
be reached or the config has no ``fleet:`` section.
"""

from __future__ import annotations

from spanscore.config import ServiceConfig
from spanscore.errors import ConfigError
from spanscore.fleet.acl import NodeAcl
from spanscore.printable import printable, say
from spanscore.sampling.rule_sets import canonical_rules, parse_rules_document, rule_set_version


def check_keeper(config: ServiceConfig, *, timeout_s: float = 5.0) -> int:
    from kazoo.exceptions import NoAuthError

    from spanscore.fleet.inspect import inspect_fleet

    if config.fleet is None:
        say("missing: this config has no fleet: section, so its replicas would not coordinate (--keeper checks one)")
        return 1
    fleet = config.fleet
    try:
        fleet.require_shared_store(config.storage.dsn)
    except ConfigError as exc:
        print(f"missing: {exc}")
        return 1
    try:
        view = inspect_fleet(fleet, timeout_s=timeout_s)
    except NoAuthError:
        say(
            f"missing: Keeper at {fleet.keeper} refused this credential (NoAuthError): the fleet's nodes admit "
            "another one; set the variable fleet.auth_env names to the fleet's credential"
        )
        return 1
    except Exception as exc:
        say(f"missing: Keeper at {fleet.keeper} did not answer within {timeout_s:g} s ({type(exc).__name__})")
        return 1
    say(f"fleet: Keeper at {fleet.keeper} answers; path {fleet.path}; this replica would be {fleet.replica_name()}")
    if not view.members:
        say("fleet: no replica is live yet")
    for index, name in enumerate(view.members):
        status = view.statuses.get(name, {})
        role = "leader" if index == 0 else "member"
        say(f"fleet: replica {name} ({role}) applied rules {status.get('rules_version', '?')}")
    _print_acls(view.acls, bool(fleet.auth_env))
    mine = rule_set_version(config.rules)
    if view.rules_problem:
        print(
            f"problem: the fleet's rules v{view.rules_version} are refused: {printable(view.rules_problem)}; "
            "replicas keep their running rules until a PUT /api/v1/rules or SIGHUP publishes a valid set"
        )
        return 1
    if view.rules is None:
        say(f"fleet: no rule set published yet; the first replica publishes this file's ({mine})")
        return 0
    published = parse_rules_document({"rules": view.rules}, source="fleet")
    theirs = rule_set_version(published)
    if canonical_rules(published) == canonical_rules(config.rules):
        say(f"fleet: rules v{view.rules_version} ({theirs}) are this file's")
    else:
        say(
            f"warning: the fleet's rules v{view.rules_version} ({theirs}) differ from this file's ({mine}); "
            "a replica started with it applies the fleet's (spanscore rules diff shows how)"
        )
    return 0


def _print_acls(acls: list[NodeAcl], credential: bool) -> None:
    """What each node admits, as Keeper holds it: a credential closes only nodes made or fixed with it."""
    for node in acls:
        note = " (open to any Keeper client)" if node.open else ""
        print(f"fleet: node {printable(node.path)} admits {printable(node.shown())}{note}")
    opened = [node for node in acls if node.open]
    if not opened:
        return
    if credential:
        print(
            f"warning: {len(opened)} of the fleet's nodes are open to any Keeper client; a replica started with "
            "this config sets fleet.auth_env's ACL on them when it joins"
        )
    else:
        print(
            f"warning: {len(opened)} of the fleet's nodes are open to any Keeper client: anyone who reaches Keeper "
            "can publish rules or rewrite alert states (set fleet.auth_env, docs/security.md)"
        )
