"""``spanscore config check --dsn``: connect as a spanscore user and name everything it lacks.

The checks themselves live with the store (``spanscore.storage.server_check``); this module picks the
role, opens one connection with the user's own settings (none of spanscore's, so the profile shows),
prints the report and turns it into an exit status. It changes nothing: an embedded path that holds
no store is reported, not created.
"""

from __future__ import annotations

import sys
from pathlib import Path

from clickhouse_connect.driver.exceptions import ClickHouseError
from pydantic import ValidationError

from spanscore.cli.reach import held_by_another_process
from spanscore.config import ServiceConfig
from spanscore.storage.config import StorageConfig
from spanscore.storage.connection import clean_engine_error, connect, is_embedded, redact
from spanscore.storage.query.guard import QueryLimits
from spanscore.storage.server_check import Role, check_server


def check_dsn(config: ServiceConfig, dsn: str, role: str | None) -> int:
    """0 when the user behind ``dsn`` has what its role needs; 1 naming each missing thing; 2 for a bad DSN."""
    try:
        StorageConfig(dsn=dsn)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        print(f"spanscore: --dsn {redact(dsn)}: {reason}", file=sys.stderr)
        return 2
    chosen: Role = "query" if role == "query" or (role is None and dsn == config.storage.query_dsn) else "owner"
    shown = redact(dsn)
    if dsn.startswith("chdb:///") and not (Path(dsn.removeprefix("chdb://")) / "metadata").is_dir():
        print(f"spanscore: --dsn {shown}: no embedded store there (nothing was created)", file=sys.stderr)
        return 1
    try:
        client = connect(dsn, config.storage.database)
    except ClickHouseError as exc:
        # Asked only after a failed open: this process may itself hold the store, which the lock cannot tell.
        reason = (
            "the embedded store is open in another process (a running `spanscore serve`?); the engine lets one "
            "process open it: stop that process to check it"
            if held_by_another_process(dsn)
            else clean_engine_error(str(exc))
        )
        print(f"spanscore: cannot connect to {shown}: {reason}", file=sys.stderr)
        return 1
    try:
        report = check_server(
            client,
            config.storage.database,
            role=chosen,
            embedded=is_embedded(dsn),
            cluster=config.storage.cluster,
            limits=QueryLimits.from_config(config.storage),
            readers=config.storage.query_readers,
        )
    except ClickHouseError as exc:
        print(f"spanscore: checking {shown} failed: {clean_engine_error(str(exc))}", file=sys.stderr)
        return 1
    finally:
        client.close()
    for line in report.checked:
        print(line)
    for line in report.warnings:
        print(f"warning: {line}")
    for line in report.problems:
        print(f"missing: {line}")
    if report.problems:
        count = len(report.problems)
        print(f"spanscore: {shown} as the {chosen} user: {count} thing(s) missing", file=sys.stderr)
        return 1
    print(f"store {shown}: OK as the {chosen} user")
    return 0
