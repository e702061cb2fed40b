"""What ``spanscore serve`` prints once it listens: where to send spans, where to look, what is scored.

The first line (``spanscore serving grpc=... http=... api=...``) is the one
scripts and tests wait for; the lines after it are for the person at the
terminal: the dashboard's address, the exporter settings for both OTLP
protocols, and the rules that were loaded (or that none were).
"""

from __future__ import annotations

from spanscore.alerting.checks import describe_alerts, never_firing
from spanscore.config import ServiceConfig
from spanscore.server.default_rules import describe_rules
from spanscore.server.judge_hint import judge_hint


def reachable(host: str) -> str:
    """An address a local client can use for a listener bound to ``host`` (any-address becomes loopback)."""
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def dashboard_url(config: ServiceConfig, port: int | None = None) -> str | None:
    if not config.api.enabled:
        return None
    scheme = "https" if config.api.tls else "http"
    return f"{scheme}://{reachable(config.api.host)}:{port or config.api.port}/dashboard/"


def serve_banner(config: ServiceConfig, addresses: dict[str, str], ports: dict[str, int], default_rule: bool) -> str:
    """The banner text; ``ports`` are the bound ports (they differ from the config when it asked for 0)."""
    lines = ["spanscore serving " + " ".join(f"{k}={v}" for k, v in addresses.items())]
    url = dashboard_url(config, ports.get("api"))
    if url:
        lines.append(f"  dashboard: {url}")
    token = (
        "\n    export OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer%20<token>'"
        if config.collector.auth_tokens
        else ""
    )
    receivers = (
        ("grpc", config.collector.grpc, "  send spans over gRPC:", "grpc"),
        ("http", config.collector.http, "  or over HTTP:", "http/protobuf"),
    )
    for name, listener, heading, protocol in receivers:
        if name in ports:
            endpoint = f"{'https' if listener.tls else 'http'}://{reachable(listener.host)}:{ports[name]}"
            lines.append(
                f"{heading}\n    export OTEL_EXPORTER_OTLP_PROTOCOL={protocol}\n"
                f"    export OTEL_EXPORTER_OTLP_ENDPOINT={endpoint}{token}"
            )
    model = config.judge.get("model") if config.judge else None
    if model:
        lines.append(f"  judge: {model}{_price_note(str(model))}")
    origin = " (the default rule: this config has no rules: key)" if default_rule else ""
    lines.append(f"  scoring{origin}:")
    lines.extend(f"    {line}" for line in describe_rules(config))
    lines.extend(judge_hint(config))
    if config.fleet is not None:
        lines.append(
            f"  fleet: replica {config.fleet.replica_name()} at Keeper {config.fleet.keeper}{config.fleet.path}; "
            "once joined, the fleet's published rules run instead of these where they differ "
            "(a WARNING in the log, and spanscore status, say so)"
        )
    if config.alerts:
        lines.append("  alerts:")
        lines.extend(f"    {line}" for line in describe_alerts(config.alerts))
        lines.extend(f"    warning: {warning}" for warning in never_firing(config.alerts, config.rules))
    return "\n".join(lines)


def _price_note(model: str) -> str:
    """Said at start-up, not discovered later in a cost report: a model litellm cannot price."""
    from spanscore.scorers.judge.advice import price_note

    note = price_note(model)
    return f" ({note})" if note else ""
