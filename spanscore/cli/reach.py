"""Where the command line reads and asks: the running service's API, or the store when no service answers.

A command says where it looked when nothing answered (``no_service``), and reading never creates or
migrates a store.
"""

from __future__ import annotations

import errno
import fcntl
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from spanscore.config import ServiceConfig
from spanscore.errors import SpanscoreError
from spanscore.storage.dsn import redact, scrub

if TYPE_CHECKING:
    from spanscore.storage.clickhouse import ClickHouseStore


def query_service(config: ServiceConfig, sql: str, fmt: str) -> bytes | None:
    """Ask the running service; None when nothing listens (then the store is opened directly)."""
    return call_api(config, "query", {"sql": sql, "format": fmt}, config.storage.query_max_execution_time_s + 5)


def call_api(
    config: ServiceConfig, path: str, payload: dict[str, object] | None, timeout: float, *, method: str | None = None
) -> bytes | None:
    """Call the running service's API; None when nothing listens. An error answer raises with its message."""
    if not config.api.enabled:
        return None
    request = urllib.request.Request(
        f"{api_url(config)}/api/v1/{path}",
        data=None if payload is None else json.dumps(payload).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method=method or ("GET" if payload is None else "POST"),
    )
    if config.api.auth_tokens:
        request.add_header("Authorization", f"Bearer {config.api.auth_tokens[0]}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            result: bytes = response.read()
            return result
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        try:
            answer = json.loads(detail)
            detail = "\n  ".join([answer["error"], *answer.get("problems", [])])
        except (ValueError, KeyError, TypeError):
            pass
        raise SpanscoreError(detail) from None
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def query_store(config: ServiceConfig, sql: str, fmt: str) -> bytes:
    """Read the store directly (no service answers); never create or migrate one by reading."""
    store = open_existing_store(config)
    try:
        return store.query_sync(sql, fmt)
    finally:
        store.close()


def open_existing_store(config: ServiceConfig) -> ClickHouseStore:
    """The configured store, opened for reading by a command (no service answers); never created or migrated."""
    from spanscore.storage.clickhouse import ClickHouseStore

    require_existing_store(config)
    refuse_store_held_elsewhere(config)
    config.storage.migrate = False
    store = ClickHouseStore.from_config(config.storage)
    try:
        store.open()
    except Exception as exc:
        raise SpanscoreError(unopenable(config, exc)) from None
    return store


def api_url(config: ServiceConfig) -> str:
    """The API address the CLI calls, as a URL."""
    host = "127.0.0.1" if config.api.host in ("0.0.0.0", "::", "") else config.api.host
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if config.api.tls else 'http'}://{shown}:{config.api.port}"


def no_service(config: ServiceConfig) -> str:
    """Why a command that needs the service failed: where it looked, and how to point it elsewhere."""
    return (
        f"no service answers on {api_url(config)} (api.host/api.port); start `spanscore serve`, or point at the "
        "running one with -c <its config> or SPANSCORE_API__PORT=<its API port>"
    )


def unopenable(config: ServiceConfig, exc: Exception) -> str:
    """Why the store could not be opened, in one line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return scrub(f"cannot open storage {redact(config.storage.dsn)}: {text}", config.storage.dsn)


def refuse_store_held_elsewhere(config: ServiceConfig) -> None:
    """An embedded store another process holds is most often a service whose API is not where the CLI looked."""
    if held_by_another_process(config.storage.dsn):
        raise SpanscoreError(
            f"the store {redact(config.storage.dsn)} is open in another process, most likely a `spanscore serve` whose "
            f"API is not on {api_url(config)}: point at that service with -c <its config> or "
            "SPANSCORE_API__PORT=<its API port>"
        )


def held_by_another_process(dsn: str) -> bool:
    """Whether another process has the embedded store at ``dsn`` open (always False for a server).

    The engine locks ``<data dir>/status`` while it has the store open; trying that lock (shared, without
    waiting, released at once) tells before opening, so the user reads what to do instead of the engine's
    lock error.
    """
    if not dsn.startswith("chdb:///"):
        return False
    status = Path(dsn.removeprefix("chdb://")) / "status"
    try:
        with open(status, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
    except BlockingIOError:
        return True
    except OSError:
        return False  # no status file yet: nobody holds the store
    return False


def require_existing_store(config: ServiceConfig) -> None:
    dsn = config.storage.dsn
    if not dsn.startswith("chdb:///"):
        return
    path = dsn.removeprefix("chdb://")
    if not (Path(path) / "metadata").is_dir():
        raise SpanscoreError(
            f"no service answers on {api_url(config)} and there is no store at {path}; start `spanscore serve`, "
            "or run this from the service's working directory, or with -c <its config> (storage.data_dir) or "
            "SPANSCORE_API__PORT=<its API port>"
        )


_BOUND_PORT = re.compile(r"address \('?([^',]*)'?, (\d+)\)|:(\d+)\b")


def listener_problem(config: ServiceConfig, exc: OSError) -> str:
    """A listener that could not bind, named by its config key and variable, with the fix.

    4317 and 4318 are the OTLP ports every local OpenTelemetry Collector takes too, so this is the error a
    newcomer meets first; the socket's own message names only the address.
    """
    text = str(exc)
    listeners = {
        "collector.grpc.port": config.collector.grpc.port,
        "collector.http.port": config.collector.http.port,
        "api.port": config.api.port,
    }
    in_use = exc.errno == errno.EADDRINUSE or "address already in use" in text
    for match in _BOUND_PORT.finditer(text):
        port = int(match.group(2) or match.group(3))
        for key, configured in listeners.items():
            if configured == port and in_use:
                variable = "SPANSCORE_" + key.upper().replace(".", "__")
                return (
                    f"port {port} ({key}) is already in use by another process; stop it, or set {key} in the "
                    f"config (or {variable}) to a free port"
                )
    return text
