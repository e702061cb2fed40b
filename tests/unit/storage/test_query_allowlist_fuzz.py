"""Generated queries never get a function past the check that is not on the allowlist (#26).

Queries are built from the engine's own catalogue (``system.functions``, ``system.table_functions``,
read from chDB), half of the names drawn from the allowlist so that many are accepted, and put in
every place a function can hide: call arguments, lambdas, ``APPLY(f)`` and ``APPLY(x -> ...)``,
subqueries, table functions and UNION arms. For each query the check accepts, the statement it would
run is parsed again by the engine and every name in it that calls something is resolved: each must
be on the allowlist. The walk here is independent of the check's own: any string under a key that
names a function, anywhere in the tree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from spanscore.errors import PermanentError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.query.allowlist import ALLOWED_FUNCTIONS, ALLOWED_TABLE_FUNCTIONS, PARSER_FORMS
from spanscore.storage.query.check import engine_checked_statement
from tests.service_setup import new_database_name


@pytest.fixture(scope="module")
def store(chdb_dsn: str) -> Iterator[ClickHouseStore]:
    opened = ClickHouseStore(chdb_dsn, new_database_name())
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def catalogue(store: ClickHouseStore) -> tuple[list[str], list[str]]:
    functions = [str(row[0]) for row in store.internal_query("SELECT name FROM system.functions ORDER BY name")]
    tables = [str(row[0]) for row in store.internal_query("SELECT name FROM system.table_functions ORDER BY name")]
    return functions, tables


def _name(functions: list[str]) -> st.SearchStrategy[str]:
    allowed = st.sampled_from(sorted(ALLOWED_FUNCTIONS))
    spelled = st.one_of(st.sampled_from(functions), allowed, allowed, allowed, allowed, allowed)
    combinator = st.sampled_from(["", "", "", "", "", "If", "State", "Merge", "OrNull", "Resample"])
    combined = st.tuples(spelled, combinator).map("".join)
    return st.one_of(combined, combined, combined, combined.map(str.upper), combined.map(lambda name: f"`{name}`"))


def queries(functions: list[str], tables: list[str]) -> st.SearchStrategy[str]:
    name = _name(functions)
    leaf = st.sampled_from(["c", "1", "'/etc/hostname'", "[1, 2]", "x"])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        call = st.tuples(name, st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})")
        lam = st.tuples(name, inner).map(lambda t: f"arrayMap(x -> {t[0]}(x, {t[1]}), [c])")
        return st.one_of(call, lam)

    expression = st.recursive(leaf, extend, max_leaves=6)
    apply = st.one_of(
        st.just(""),
        name.map(lambda n: f" APPLY({n})"),
        st.tuples(name, expression).map(lambda t: f" APPLY(x -> {t[0]}(x, {t[1]}))"),
    )
    source = st.one_of(
        st.just("(SELECT 1 AS c)"),
        st.just("(SELECT 1 AS c)"),
        st.sampled_from(tables).map(lambda t: f"{t}(3)"),
        st.sampled_from(sorted(ALLOWED_TABLE_FUNCTIONS)).map(lambda t: f"{t}(3)"),
    )

    def select(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.tuples(expression, apply, st.one_of(source, inner.map(lambda q: f"({q})"))).map(
            lambda t: f"SELECT {t[0]} AS c, *{t[1]} FROM {t[2]}"
        )

    one = st.recursive(select(st.just("SELECT 1 AS c")), select, max_leaves=3)
    return st.one_of(one, st.tuples(one, one).map(lambda t: f"{t[0]} UNION ALL {t[1]}"))


def called_names(tree: Any) -> Iterator[tuple[str, bool]]:
    """(name, is a table function) for every string under a key that names something called."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            if isinstance(value, str) and ("func" in key.lower() or (key == "name" and tree.get("type") == "Function")):
                yield value, False
            if key == "table_function" and isinstance(value, dict):
                yield str(value.get("name")), True
                yield from called_names(value.get("arguments"))
            else:
                yield from called_names(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from called_names(item)


@pytest.mark.reliability("query-api-own-database")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whatever_the_check_accepts_calls_only_allowlisted_functions(
    store: ClickHouseStore, catalogue: tuple[list[str], list[str]], data: st.DataObject
) -> None:
    sql = data.draw(queries(*catalogue))
    assert store._readers is not None
    catalog = store._functions()
    with store._readers.use() as reader:
        try:
            statement = engine_checked_statement(reader, sql, store.database, catalog)
        except (PermanentError, DatabaseError):  # refused, or no query at all (a syntax error)
            return
        event("accepted")
        parsed = reader.query("SELECT parseQueryToJSON({s:String})", parameters={"s": statement})
        tree = json.loads(parsed.result_rows[0][0])
    for name, as_table in called_names(tree):
        if as_table:
            assert name in ALLOWED_TABLE_FUNCTIONS, (sql, name)
        else:
            assert name in PARSER_FORMS or catalog.resolve(name) in ALLOWED_FUNCTIONS, (sql, name)


def test_every_allowlisted_name_is_one_the_engine_knows(catalogue: tuple[list[str], list[str]]) -> None:
    """A misspelt entry would allow nothing today and, worse, whatever the engine names that way tomorrow."""
    functions, tables = catalogue
    assert ALLOWED_FUNCTIONS - set(functions) == set()
    assert ALLOWED_TABLE_FUNCTIONS - set(tables) == set()
    assert PARSER_FORMS.isdisjoint(functions)
