"""The stand-in keeps one engine up between requests, as a server stays up between queries (#36, bench.fleet).

chDB stops its engine when the last connection to a path closes. The stand-in opened a connection per request,
so at every quiet moment the engine stopped and the next request started it again: whatever lives in the
engine's memory was lost (``SYSTEM STOP MERGES``, which bench.fleet relies on to count every copy of a session's
scoring record; a merge then replaced an earlier record by a later one, and the bench counted a legitimate
rescoring as a second scoring without its record), and each start paid for loading every database again.
A Memory table shows it: its rows live in the engine only.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import clickhouse_connect

from spanscore.testing.clickhouse_standin import spawn, stop

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "clickhouse"


def test_what_the_engine_holds_in_memory_outlives_the_request_that_made_it(tmp_path: Path) -> None:
    password = secrets.token_hex(12)
    users = tmp_path / "owner-user.sql"
    users.write_text((DEPLOY / "owner-user.sql").read_text().replace("'CHANGE-ME'", f"'{password}'"))
    process, port = spawn(str(tmp_path / "clickhouse"), str(users))
    try:
        for statement in (
            "CREATE DATABASE IF NOT EXISTS engine_check",
            "CREATE TABLE engine_check.held (n UInt8) ENGINE = Memory",
            "INSERT INTO engine_check.held VALUES (1)",
        ):
            client = clickhouse_connect.get_client(
                host="127.0.0.1", port=port, username="spanscore_owner", password=password
            )
            client.command(statement)
            client.close()  # nothing connected between two requests: an idle moment
        client = clickhouse_connect.get_client(
            host="127.0.0.1", port=port, username="spanscore_owner", password=password
        )
        try:
            assert client.command("SELECT count() FROM engine_check.held") == 1
        finally:
            client.close()
    finally:
        stop(process)
