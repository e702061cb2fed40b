"""Settings of the network listeners: the OTLP receivers (gRPC, HTTP), the API, their TLS and tokens.

Kept beside the listeners that read them; ``spanscore.config`` composes them into the whole file (the one
import from the configuration up into server/, allowed by the import contract for this module alone).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

ANY_HOST = "*"
"""An ``api.allowed_hosts`` entry that accepts any Host header."""
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)


def check_allowed_host(entry: str) -> str:
    """One ``api.allowed_hosts`` entry, normalised: a DNS name, an IP address or ``*``; no port, no scheme."""
    name = entry.strip().lower().rstrip(".")
    if name == ANY_HOST:
        return name
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if is_ip_literal(name) or _HOST_NAME.match(name):
        return name
    raise ValueError(
        "must be a host name or an IP address without scheme or port (e.g. spanscore.internal), or * for any"
    )


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check_allowed_hosts(hosts: list[str]) -> list[str]:
    """Every entry of an ``allowed_hosts`` list normalised, or one error listing each bad entry."""
    problems = []
    checked = []
    for index, host in enumerate(hosts):
        try:
            checked.append(check_allowed_host(host))
        except ValueError as exc:
            problems.append(f"[{index}] {host!r} {exc}")
    if problems:
        raise ValueError("; ".join(problems))
    return checked


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class TlsConfig(_Section):
    """Server TLS for a listener; both files are PEM."""

    cert_file: Path
    """Certificate chain presented to clients."""
    key_file: Path
    """Private key of the certificate."""


class GrpcReceiverConfig(_Section):
    """The OTLP/gRPC receiver (TraceService and LogsService)."""

    enabled: bool = True
    host: str = "127.0.0.1"
    """Interface to bind; loopback unless you mean to accept remote agents."""
    port: int = Field(4317, ge=0, le=65535)
    """0 picks a free port (tests)."""
    max_message_bytes: int = Field(64 << 20, ge=1024)
    """Largest accepted request; larger ones get RESOURCE_EXHAUSTED."""
    max_concurrent_reads: int = Field(4, ge=1)
    """Exports read and decoded at once (after their token is checked); others wait, reading nothing. This times
    ``max_message_bytes`` bounds what exports hold in memory (docs/security.md)."""
    max_concurrent_calls: int = Field(1024, ge=1)
    """Calls open at once, waiting ones included; beyond it grpcio answers RESOURCE_EXHAUSTED at once, without
    a retry hint. A waiting call reads nothing, so this bounds bookkeeping, not messages."""
    max_streams_per_connection: int = Field(1024, ge=1)
    """Concurrent HTTP/2 streams (calls) one connection may open. Streams a client opens past it are reset
    (REFUSED_STREAM, seen as UNAVAILABLE without a retry hint), so keep it above any exporter's concurrency."""
    tls: TlsConfig | None = None


class HttpReceiverConfig(_Section):
    """The OTLP/HTTP receiver: POST /v1/traces and /v1/logs, protobuf or JSON, optionally gzip."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(4318, ge=0, le=65535)
    max_body_bytes: int = Field(64 << 20, ge=1024)
    """Largest accepted body, checked before and after gzip decompression; larger ones get 413."""
    max_concurrent_reads: int = Field(4, ge=1)
    """Bodies read and decoded at once (after their token is checked); others wait, reading nothing, and get 503
    with Retry-After after 30 s. This times ``max_body_bytes`` bounds what bodies hold in memory."""
    tls: TlsConfig | None = None
    allowed_hosts: list[str] = []
    """Host names the receiver answers to besides localhost, 127.0.0.1, ::1, IP literals and its bind address (the
    API's guard against DNS rebinding): add the names exporters use, e.g. ``spanscore-collector``; ``*`` = any."""

    @field_validator("allowed_hosts")
    @classmethod
    def _check_allowed_hosts(cls, hosts: list[str]) -> list[str]:
        return check_allowed_hosts(hosts)


_PLACEHOLDERS = re.compile(r"^(change-?me|replace|<token>|your[-_ ]?token|xxx+)", re.IGNORECASE)


def tokens_field(value: Any) -> Any:
    """Bearer tokens: a list, or one token as a plain string; the examples' placeholders are refused.

    ``deploy/.env.example`` and the Kubernetes Secret example hold placeholders; a stack started with them
    unchanged would accept a token anyone can read in this repository.
    """
    tokens = [value] if isinstance(value, str) else value
    if isinstance(tokens, list):
        for token in tokens:
            if isinstance(token, str) and _PLACEHOLDERS.match(token.strip()):
                raise ValueError(
                    "is a placeholder from the examples, not a secret: set a token of your own "
                    "(for example the output of `openssl rand -hex 32`)"
                )
    return tokens


class ApiConfig(_Section):
    """The service's API listener: the read-only query API, metrics and health."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(4319, ge=0, le=65535)
    auth_tokens: list[str] = []
    """Bearer tokens for the query API (separate from ingestion tokens); empty means open on its bind address.
    One token may be given as a plain string."""

    _tokens = field_validator("auth_tokens", mode="before")(lambda cls, value: tokens_field(value))
    tls: TlsConfig | None = None
    allowed_hosts: list[str] = []
    """Host names the API answers to besides localhost, 127.0.0.1, ::1, IP literals and its bind address (a guard
    against DNS rebinding): add the names clients use to reach it, e.g. ``spanscore.internal``; ``*`` accepts any."""
    metrics_public: bool = False
    """Serve ``/metrics`` without a token even when ``auth_tokens`` are set (for a scraper that sends none)."""

    @field_validator("allowed_hosts")
    @classmethod
    def _check_allowed_hosts(cls, hosts: list[str]) -> list[str]:
        return check_allowed_hosts(hosts)
