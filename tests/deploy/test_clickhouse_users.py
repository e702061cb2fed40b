"""deploy/clickhouse: every statement is one the engine's own parser takes, and the users get what spanscore needs.

No ClickHouse server runs here, so the statements are not executed: the embedded engine (chDB, the same
parser as the server) parses each one with ``formatQuerySingleLine``, a function that parses its argument
and never runs it. The grants are read back with the same parser ``spanscore config check --dsn`` applies
to a server's ``SHOW GRANTS``, against the list of what spanscore runs (``spanscore.storage.access``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from spanscore.storage.access import (
    CLUSTER_REQUIREMENTS,
    OWNER_REQUIREMENTS,
    QUERY_REQUIREMENTS,
    missing,
    needless_for_reading,
    parse_grants,
)
from spanscore.storage.config import StorageConfig
from spanscore.storage.query.guard import QueryLimits, engine_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "clickhouse"
SINGLE_NODE = ("owner-user.sql", "query-user.sql")


def statements(name: str) -> list[str]:
    """A file's statements, without their ``--`` comments (no string in these files holds ``--`` or ``;``)."""
    text = re.sub(r"--[^\n]*", "", (DEPLOY / name).read_text(encoding="utf-8"))
    return [" ".join(chunk.split()) for chunk in text.split(";") if chunk.strip()]


def _all_files() -> list[tuple[str, int]]:
    return [(path.name, i) for path in sorted(DEPLOY.glob("*.sql")) for i in range(len(statements(path.name)))]


def parsed(engine: Any, statement: str) -> str:
    """The engine's own formatting of ``statement``: it parses it (and raises on a syntax error), never runs it."""
    return str(
        engine.query("SELECT formatQuerySingleLine({sql:String})", parameters={"sql": statement}).result_rows[0][0]
    )


def test_the_shipped_files_are_the_owner_the_query_user_and_the_cluster_variant() -> None:
    assert sorted(path.name for path in DEPLOY.glob("*.sql")) == ["cluster.sql", "owner-user.sql", "query-user.sql"]


@pytest.mark.parametrize(("name", "index"), _all_files())
def test_every_statement_parses_with_the_engines_parser(engine: Any, name: str, index: int) -> None:
    statement = statements(name)[index]
    formatted = parsed(engine, statement)
    assert formatted.split()[0] in {"CREATE", "GRANT", "REVOKE"}, formatted


def test_the_parse_check_refuses_what_the_engine_would_refuse(engine: Any) -> None:
    for broken in (
        "GRANT SELECT ON spanscore.* TO",
        "CREATE USER u IDENTIFIED WITH sha256_password BY",
        "GRANT FLY ON *.* TO u",
    ):
        with pytest.raises(DatabaseError, match="SYNTAX_ERROR"):
            parsed(engine, broken)


def _grants(name: str) -> list[Any]:
    return parse_grants(s for s in statements(name) if s.split()[0] in {"GRANT", "REVOKE"})


def test_the_owner_gets_exactly_what_spanscore_runs() -> None:
    grants = _grants("owner-user.sql")
    assert missing(grants, OWNER_REQUIREMENTS, "spanscore") == []
    held = {grant.privilege for grant in grants if not grant.revoke}
    assert held == {requirement.privilege for requirement in OWNER_REQUIREMENTS}


def test_the_query_user_gets_reading_and_nothing_else() -> None:
    grants = _grants("query-user.sql")
    assert missing(grants, QUERY_REQUIREMENTS, "spanscore") == []
    assert needless_for_reading(grants) == []


def _profile(name: str, profile: str) -> dict[str, str]:
    (statement,) = [s for s in statements(name) if s.startswith(f"CREATE SETTINGS PROFILE IF NOT EXISTS {profile}")]
    return {key: value.strip("'") for key, value in re.findall(r"(\w+) = ('[^']*'|\d+)", statement)}


def test_the_query_profile_pins_the_values_spanscore_sends() -> None:
    """A readonly=1 user may not change a setting: any value spanscore sends that differs is refused."""
    profile = _profile("query-user.sql", "spanscore_query_profile")
    sent = engine_settings(QueryLimits.from_config(StorageConfig()))
    assert {key: float(v) if v[0].isdigit() else v for key, v in profile.items() if key in sent} == {
        key: float(v) if isinstance(v, int | float) else v for key, v in sent.items()
    }


def test_the_owner_profile_keeps_an_insert_synchronous() -> None:
    profile = _profile("owner-user.sql", "spanscore_owner_profile")
    assert profile["async_insert"] == "0" and profile["wait_for_async_insert"] == "1"
    assert "readonly" not in profile  # spanscore's own readers set readonly=1 on themselves


def test_the_cluster_file_is_the_single_node_files_on_every_node_plus_the_cluster_grant(engine: Any) -> None:
    on_every_node = [parsed(engine, s) for s in statements("cluster.sql")]
    assert all(" ON CLUSTER `{cluster}`" in s for s in on_every_node)
    single = {parsed(engine, s) for name in SINGLE_NODE for s in statements(name)}
    assert {s.replace(" ON CLUSTER `{cluster}`", "") for s in on_every_node} == single | {
        "GRANT CLUSTER ON *.* TO spanscore_owner"
    }
    owner = [s.replace(" ON CLUSTER `{cluster}`", "") for s in on_every_node if s.endswith(" spanscore_owner")]
    grants = parse_grants(owner)
    assert missing(grants, OWNER_REQUIREMENTS + CLUSTER_REQUIREMENTS, "spanscore") == []
