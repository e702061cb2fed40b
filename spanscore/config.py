"""Service configuration: one YAML file, validated once at start-up by pydantic.

Every key has a default, so an empty file (or none) runs the embedded store on
loopback. ``SPANSCORE_<SECTION>__<KEY>`` environment variables override the file
(``__`` separates nesting levels; values are read as YAML scalars, so
``SPANSCORE_COLLECTOR__GRPC__PORT=0`` is the integer 0). All problems are
reported together, each naming its key and the file. Components receive these
objects; nothing else reads the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spanscore.alerting.config import AlertConfig, AlertingConfig
from spanscore.collector.limits import LimitsConfig
from spanscore.config_secrets import is_secret_location, is_secret_value, scrub
from spanscore.errors import ConfigError
from spanscore.export.forward import ForwardConfig
from spanscore.fleet.config import FleetConfig
from spanscore.redaction.config import RedactConfig, RedactionPolicies, rule_redaction_problems
from spanscore.runs.config import RunsConfig, SessionsConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.judge.config import JudgeConfig
from spanscore.scorers.preflight import document_scorer_uses, unknown_scorer_problems
from spanscore.scoring.config import ScoringConfig
from spanscore.server.listeners_config import (
    ApiConfig,
    GrpcReceiverConfig,
    HttpReceiverConfig,
    tokens_field,
)
from spanscore.spelling import did_you_mean
from spanscore.storage.config import StorageConfig

ENV_PREFIX = "SPANSCORE_"
DATA_DIR_NAME = "spanscore-data"
SPOOL_DIR_NAME = "spool"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class CollectorConfig(_Section):
    grpc: GrpcReceiverConfig = GrpcReceiverConfig()
    http: HttpReceiverConfig = HttpReceiverConfig()
    runs: RunsConfig = RunsConfig()
    """What an agent run is and when it is ready to score (see docs/conventions.md)."""
    sessions: SessionsConfig = SessionsConfig()
    """When a conversation is ready for ``target: session`` rules (see docs/sampling.md, "Sessions")."""
    limits: LimitsConfig = LimitsConfig()
    """Per-request span count, attribute value length and attributes per span."""
    redact: str | None = None
    """A set of ``redact.sets`` (or ``all``) masked in span attributes and log bodies before they are spooled or
    stored; unset: stored as sent, and redaction happens only before a judge call (docs/security.md)."""
    auth_tokens: list[str] = []
    """Bearer tokens accepted on the OTLP receivers; empty means no authentication. One token may be given
    as a plain string (``SPANSCORE_COLLECTOR__AUTH_TOKENS=<token>``), so one secret serves every consumer."""

    _tokens = field_validator("auth_tokens", mode="before")(lambda cls, value: tokens_field(value))


class ServiceConfig(_Section):
    """The whole file."""

    collector: CollectorConfig = CollectorConfig()
    storage: StorageConfig = StorageConfig()
    api: ApiConfig = ApiConfig()
    rules: list[RuleConfig] = []
    """Sampling rules: which runs get which scorers at which rate (see docs/sampling.md)."""
    scoring: ScoringConfig = ScoringConfig()
    forward: ForwardConfig | None = None
    """Send scores (and optionally the received spans) to another OTLP backend; unset = keep them here only."""
    judge: dict[str, Any] = {}
    """The default LLM judge (model, api_base, api_key_env, limits), as written: scorers merge their own
    ``judge`` options into it. Checked against ``JudgeConfig`` when the file is loaded; ``judge_config()`` is
    the typed form."""
    redact: RedactConfig = RedactConfig()
    """What is masked in run text before a judge sees it (docs/security.md, "Redaction"); rules may add sets."""
    alerts: list[AlertConfig] = []
    """Alerts on scores: an aggregate over a window against a threshold, with receivers (docs/alerts.md)."""
    alerting: AlertingConfig = AlertingConfig()
    fleet: FleetConfig | None = None
    """Several replicas as one service, coordinated through Keeper (docs/deployment.md, "Running a fleet");
    unset for the single process."""

    @field_validator("alerts")
    @classmethod
    def _unique_alert_names(cls, alerts: list[AlertConfig]) -> list[AlertConfig]:
        seen: set[str] = set()
        for index, alert in enumerate(alerts):
            if alert.name in seen:
                raise ValueError(f"alerts[{index}]: the name {alert.name!r} is used twice; names must be unique")
            seen.add(alert.name)
        return alerts

    @field_validator("rules")
    @classmethod
    def _unique_rule_names(cls, rules: list[RuleConfig]) -> list[RuleConfig]:
        seen: dict[str, int] = {}
        for index, rule in enumerate(rules):
            if rule.name in seen:
                raise ValueError(f"rule name {rule.name!r} is used by rules[{seen[rule.name]}] and rules[{index}]")
            seen[rule.name] = index
        return rules

    def judge_config(self) -> JudgeConfig | None:
        """The ``judge:`` section as a ``JudgeConfig`` (None when empty): the one place it is validated."""
        return JudgeConfig.model_validate(self.judge) if self.judge else None

    log_level: str = Field("INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR)$")
    shutdown_timeout_s: float = Field(30.0, gt=0)
    """How long SIGTERM may take to drain buffered spans before the process gives up."""

    @model_validator(mode="after")
    def _rules_name_defined_redaction_sets(self) -> ServiceConfig:
        policies = RedactionPolicies(self.redact)
        problems = rule_redaction_problems(self.rules, policies)
        if self.collector.redact is not None and policies.unknown_sets([self.collector.redact]):
            problems.append(f"collector.redact: no set named {self.collector.redact!r} under redact.sets (or 'all')")
        if self.collector.redact is not None and self.forward is not None and self.forward.spans:
            problems.append(
                "collector.redact and forward.spans: pass-through forwards the spans as received, unredacted; "
                "turn one of them off"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _drain_fits_in_shutdown(self) -> ServiceConfig:
        # Cut scoring jobs are rescored after a restart, so a drain that ends leaves time to flush and exit 0;
        # a drain as long as the whole shutdown ran into the deadline and exited 1.
        if self.scoring.drain_timeout_s >= self.shutdown_timeout_s:
            raise ValueError(
                f"scoring.drain_timeout_s ({self.scoring.drain_timeout_s:g}) must be shorter than "
                f"shutdown_timeout_s ({self.shutdown_timeout_s:g}), leaving time to flush scores and spans"
            )
        return self


def load_config(path: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> ServiceConfig:
    """Read, overlay the environment, validate; raise ConfigError listing every problem."""
    environ = os.environ if environ is None else environ
    source = str(path) if path else "<defaults>"
    document: dict[str, Any] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"config {source}: cannot read: {exc.strerror or exc}") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"config {source}: not valid YAML: {_yaml_problem(exc)}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config {source}: the top level must be a mapping, got {type(loaded).__name__}")
        document = loaded or {}
    from_environment = _overlay_environment(document, environ, source)
    try:
        config = ServiceConfig.model_validate(document)
    except ValidationError as exc:
        scorers = unknown_scorer_problems(document_scorer_uses(document))  # listed now, not after the keys are fixed
        raise ConfigError(_describe(exc, source, from_environment=from_environment, more=scorers)) from None
    _check_judge(config, source)
    _fill_data_paths(config.storage)
    return config


def _fill_data_paths(storage: StorageConfig) -> None:
    """Default the store and the spool into the writable data directory, never next to the config file."""
    data_dir = Path(storage.data_dir or DATA_DIR_NAME).resolve()
    storage.data_dir = data_dir.as_posix()
    if not storage.dsn:
        storage.dsn = f"chdb://{data_dir.as_posix()}"
    if not storage.spool_dir:
        storage.spool_dir = (data_dir / SPOOL_DIR_NAME).as_posix()


def _check_judge(config: ServiceConfig, source: str) -> None:
    try:
        config.judge_config()
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, prefix=("judge",))) from None
    except ValueError as exc:
        raise ConfigError(f"config {source}: {exc}") from None


def _overlay_environment(
    document: dict[str, Any], environ: Mapping[str, str], source: str
) -> dict[tuple[str, ...], str]:
    """Set each ``SPANSCORE_A__B`` variable's value at ``a.b``; return which variable set which key."""
    origins: dict[tuple[str, ...], str] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        keys = [k.lower() for k in name[len(ENV_PREFIX) :].split("__")]
        if not all(keys):
            raise ConfigError(f"environment {name}: empty key segment")
        node = document
        for key in keys[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment {name}: {key} is not a section in {source}")
            node = child
        try:
            node[keys[-1]] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            node[keys[-1]] = raw
        origins[tuple(keys)] = name
    return origins


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What is wrong and where, without the snippet of the file a YAML error quotes (it may hold a secret)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem or exc.context or 'syntax error'} at line {mark.line + 1}, column {mark.column + 1}"
    return type(exc).__name__


def _location(parts: tuple[int | str, ...]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not _plain_key(part):
            text += f"[{part!r}]"  # quoted: blanks, control characters or an empty key stay visible
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


def _plain_key(key: str) -> bool:
    return bool(key) and key.isprintable() and not any(character.isspace() for character in key)


def _describe(
    exc: ValidationError,
    source: str,
    prefix: tuple[str, ...] = (),
    from_environment: Mapping[tuple[str, ...], str] | None = None,
    more: Sequence[str] = (),
) -> str:
    lines = [f"config {source}: {exc.error_count() + len(more)} problem(s)"]
    for error in exc.errors():
        where = _location(prefix + tuple(error["loc"]))
        variable = _set_by(prefix + tuple(error["loc"]), from_environment or {})
        if variable:
            where = f"{where} (from the environment, {variable})"
        if error["type"] == "filter":
            lines.extend(f"  {where}{sub_path}: {problem}" for sub_path, problem in error["ctx"]["problems"])
            continue
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            loc = prefix + tuple(error["loc"])
            hint = did_you_mean(str(loc[-1]), _keys_beside(loc))
            message = f"unknown key{hint or ' (check the spelling against docs/configuration.md)'}"
        got = error.get("input")
        secret = is_secret_location(prefix + tuple(error["loc"])) or is_secret_value(got)
        if secret:
            message = scrub(message, got)
        quiet = secret or error["type"] == "extra_forbidden" or isinstance(got, dict | list) or "got" in message
        suffix = "" if quiet else f", got {got!r}"
        lines.append(f"  {where}: {message}{suffix}")
    lines.extend(f"  {problem}" for problem in more)
    return "\n".join(lines)


def _set_by(loc: tuple[int | str, ...], origins: Mapping[tuple[str, ...], str]) -> str | None:
    """The environment variable that set ``loc`` or a section above it, if one did."""
    path = tuple(str(part) for part in loc)
    for length in range(len(path), 0, -1):
        if path[:length] in origins:
            return origins[path[:length]]
    return None


def _keys_beside(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the section holding ``loc`` takes (its model's fields), to suggest one for a misspelt key."""
    model: Any = ServiceConfig
    for part in loc[:-1]:
        if isinstance(part, int) or not (isinstance(model, type) and issubclass(model, BaseModel)):
            model = _inner_model(model)
            if isinstance(part, int):
                continue
        field = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return []
        model = _inner_model(field.annotation)
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _inner_model(annotation: Any) -> Any:
    """The model inside ``X | None``, ``list[X]`` or ``tuple[X, ...]``, else the annotation itself."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _inner_model(argument)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation
