"""Reading a user's grants the way ``spanscore config check --dsn`` does.

No ClickHouse server runs here. The lines below are the forms ClickHouse documents for GRANT, REVOKE and
SHOW GRANTS (targets ``*.*``, ``db.*``, ``db*.*``, ``db.table``, column lists, partial revokes, role
assignments); the embedded engine supplies one real ``SHOW GRANTS`` (its default user's) and the real
privilege hierarchy (``system.privileges``), which ``ANCESTORS`` must agree with.
"""

from __future__ import annotations

from typing import Any

from spanscore.storage.access import (
    ANCESTORS,
    CLUSTER_REQUIREMENTS,
    OWNER_REQUIREMENTS,
    QUERY_REQUIREMENTS,
    Grant,
    missing,
    needless_for_reading,
    parse_grants,
)


def test_the_documented_forms_are_read_with_their_targets() -> None:
    grants = parse_grants(
        [
            "GRANT SELECT(TraceId, Score), INSERT ON spanscore.scores TO q",
            "GRANT ALL PRIVILEGES ON *.* TO admin WITH GRANT OPTION",
            "GRANT SHOW TABLES ON `span-score`.* TO q",
            "GRANT SELECT ON span*.* TO q",
            "REVOKE ALTER TTL ON spanscore.scores FROM o",
            "REVOKE GRANT OPTION FOR SELECT ON *.* FROM o",
            "GRANT reader, writer TO o",
            "GRANT TABLE ENGINE ON * TO default",
            "",
        ]
    )
    assert grants == [
        Grant(False, "SELECT", "spanscore", "scores", True),
        Grant(False, "INSERT", "spanscore", "scores", False),
        Grant(False, "ALL", "*", "*", False),
        Grant(False, "SHOW TABLES", "span-score", "*", False),
        Grant(False, "SELECT", "span*", "*", False),
        Grant(True, "ALTER TTL", "spanscore", "scores", False),
    ]


def test_a_grant_on_some_tables_or_columns_is_not_a_grant_on_the_database() -> None:
    grants = parse_grants(
        ["GRANT SELECT(TraceId) ON spanscore.scores TO q", "GRANT SHOW TABLES ON spanscore.scores TO q"]
    )
    assert missing(grants, QUERY_REQUIREMENTS, "spanscore") == [
        "SELECT ON spanscore.* (the query API and the dashboard read spanscore's tables and views)",
        "SHOW TABLES ON spanscore.* (SHOW TABLES and EXISTS in API queries)",
    ]


def test_a_group_grant_or_a_prefix_wildcard_covers_and_another_database_does_not() -> None:
    assert missing(parse_grants(["GRANT SHOW, SELECT ON span*.* TO q"]), QUERY_REQUIREMENTS, "spanscore") == []
    gaps = missing(parse_grants(["GRANT SHOW, SELECT ON other.* TO q"]), QUERY_REQUIREMENTS, "spanscore")
    assert [gap.split(" (")[0] for gap in gaps] == ["SELECT ON spanscore.*", "SHOW TABLES ON spanscore.*"]


def test_a_partial_revoke_is_named_with_what_it_takes() -> None:
    grants = parse_grants(["GRANT ALL ON *.* TO o", "REVOKE ALTER ON spanscore.scores FROM o"])
    gaps = missing(grants, OWNER_REQUIREMENTS, "spanscore")
    assert [gap.split(" (")[0] for gap in gaps] == [
        "ALTER ADD COLUMN ON spanscore.*",
        "ALTER ORDER BY ON spanscore.*",
        "ALTER SETTINGS ON spanscore.*",
        "ALTER ADD PROJECTION ON spanscore.*",
        "ALTER MATERIALIZE PROJECTION ON spanscore.*",
        "ALTER TTL ON spanscore.*",
    ]
    assert "partly revoked: ALTER ON spanscore.scores" in gaps[0]


def test_a_global_privilege_needs_a_global_grant() -> None:
    grants = parse_grants(["GRANT ALL ON spanscore.* TO o"])
    gaps = missing(grants, OWNER_REQUIREMENTS + CLUSTER_REQUIREMENTS, "spanscore")
    assert [gap.split(" (")[0] for gap in gaps] == ["KILL QUERY ON *.*", "CLUSTER ON *.*"]


def test_the_engines_default_user_holds_everything_the_owner_needs(engine: Any) -> None:
    lines = [str(row[0]) for row in engine.query("SHOW GRANTS FINAL").result_rows]
    grants = parse_grants(lines)
    assert {"ALTER", "CREATE", "DROP", "INSERT", "SELECT", "KILL QUERY", "CLUSTER", "SOURCES"} <= {
        g.privilege for g in grants
    }
    assert missing(grants, OWNER_REQUIREMENTS + CLUSTER_REQUIREMENTS + QUERY_REQUIREMENTS, "spanscore") == []
    assert "INSERT ON *.*" in needless_for_reading(grants) and "SOURCES ON *.*" in needless_for_reading(grants)


def test_the_groups_of_each_required_privilege_are_the_engines(engine: Any) -> None:
    parents = {
        str(name): (str(parent) if parent is not None else None)
        for name, parent in engine.query("SELECT privilege, parent_group FROM system.privileges").result_rows
    }
    for privilege, groups in ANCESTORS.items():
        chain: list[str] = []
        current = parents[privilege]
        while current is not None:
            chain.append(current)
            current = parents[current]
        assert tuple(chain) == groups, privilege
    required = {r.privilege for r in OWNER_REQUIREMENTS + CLUSTER_REQUIREMENTS + QUERY_REQUIREMENTS}
    assert required == set(ANCESTORS)
