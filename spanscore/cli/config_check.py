"""``spanscore config check``: everything ``serve`` would refuse, found without starting anything.

``load_config`` has already validated keys, types, filters and the judge
section by the time this runs. Here come the checks that start-up makes
later: scorer ids and their judges (``scorers.preflight``), each scorer's
options (by building it, which imports the judge stack only when an LLM
scorer is configured), and whether the data directory and spool can be
created. It returns a summary of what the service would load.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from spanscore.alerting.checks import describe_alerts, never_firing
from spanscore.config import ServiceConfig
from spanscore.errors import ConfigError
from spanscore.scorers.preflight import check_scorers, rule_scorer_uses
from spanscore.storage.dsn import redact


def check_config(config: ServiceConfig, environ: Mapping[str, str]) -> list[str]:
    """Raise ``ConfigError`` for the first class of problems found; return summary lines otherwise."""
    from spanscore.scorers.judge.current import Judge
    from spanscore.scoring.live import build_rule_scorers

    _check_receiver_binds(config)
    check_scorers(rule_scorer_uses(config.rules), config.judge, environ)
    build_rule_scorers(config.rules, Judge(config.judge_config()))
    problems = [problem for directory in _local_directories(config) if (problem := _unwritable(directory))]
    if problems:
        raise ConfigError("config: " + "; ".join(problems))
    lines = [f"storage: {redact(config.storage.dsn)} database={config.storage.database}"]
    lines.append(f"spool: {config.storage.spool_dir}")
    lines.append(f"judge: {config.judge.get('model', 'none (no LLM scorer may be used)')}")
    for rule in config.rules:
        lines.append(f"rule {rule.name}: sample={rule.sample:g} scorers={', '.join(s.name for s in rule.scorers)}")
    lines.extend(_fleet_lines(config, environ))
    lines.extend(describe_alerts(config.alerts))
    lines.extend(f"warning: {warning}" for warning in never_firing(config.alerts, config.rules))
    lines.extend(f"warning: {warning}" for warning in _judge_warnings(config))
    return lines


def _fleet_lines(config: ServiceConfig, environ: Mapping[str, str]) -> list[str]:
    """Where the fleet is, and a warning when a session could be scored before other replicas' turns show."""
    fleet = config.fleet
    if fleet is None:
        return []
    credential = fleet.credential(environ)  # ConfigError naming the variable, as serve would refuse
    access = (
        f"digest user {credential[0]} (nodes it creates or joins admit only it)"
        if credential
        else "open nodes (no fleet.auth_env)"
    )
    lines = [f"fleet: keeper={fleet.keeper} path={fleet.path} replica={fleet.replica_name()} access={access}"]
    quiet = config.collector.sessions.quiet_period_s
    if any(rule.target == "session" for rule in config.rules) and quiet < 3 * fleet.turn_poll_s + 2:
        lines.append(
            f"warning: collector.sessions.quiet_period_s ({quiet:g}) is short for a fleet: an owner reads other "
            f"replicas' turns every fleet.turn_poll_s ({fleet.turn_poll_s:g}); a session may be scored, then "
            "scored again as continued (docs/deployment.md, Running a fleet)"
        )
    return lines


def _check_receiver_binds(config: ServiceConfig) -> None:
    """The receivers' own start-up check (beyond loopback needs collector.auth_tokens), made without binding.

    serve refuses such a config only when a receiver starts; a check that said OK would send the operator to
    a start that fails.
    """
    from spanscore.server.auth import TokenCheck, require_tokens_beyond_loopback

    tokens = TokenCheck(config.collector.auth_tokens)
    for setting, receiver in (
        ("collector.grpc.host", config.collector.grpc),
        ("collector.http.host", config.collector.http),
    ):
        if receiver.enabled:
            require_tokens_beyond_loopback(tokens, receiver.host, setting)


def _judge_warnings(config: ServiceConfig) -> list[str]:
    """api_base shape, key and price warnings for the judge: section and every scorer's judge override."""
    judges: list[dict[str, object]] = []
    if config.judge.get("model"):
        judges.append(dict(config.judge))
    for rule in config.rules:
        for spec in rule.scorers:
            options = dict(spec.options)
            override = options.get("judge")
            merged = {**config.judge, **(override if isinstance(override, dict) else {})}
            if isinstance(options.get("model"), str):
                merged["model"] = options["model"]
            if merged.get("model") and (override or options.get("model")):
                judges.append(merged)
    if not judges:
        return []
    from spanscore.scorers.judge.advice import judge_warnings

    return judge_warnings(judges)


def _local_directories(config: ServiceConfig) -> list[Path]:
    directories = []
    if config.storage.dsn.startswith("chdb:///"):
        directories.append(Path(config.storage.dsn.removeprefix("chdb://")))
    if config.storage.spool_max_bytes > 0 and config.storage.spool_dir:
        directories.append(Path(config.storage.spool_dir))
    return directories


def _unwritable(directory: Path) -> str | None:
    """Why the service could not create or write ``directory``, or None."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{directory} cannot be created: {existing} is not a directory (set storage.data_dir)"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{directory} is not writable by this user (set storage.data_dir to a writable directory)"
    return None
