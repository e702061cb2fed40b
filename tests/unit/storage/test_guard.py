from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.errors import PermanentError
from spanscore.storage.query.guard import (
    QueryLimits,
    dashboard_settings,
    engine_settings,
    explain_engine_error,
    guard_query,
)

LIMITS = QueryLimits(max_query_bytes=2000)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select count() from otel_traces;",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "SHOW TABLES",
        "DESCRIBE TABLE otel_traces",
        "SELECT ';' AS semicolon, 'SETTINGS' AS word -- a comment; with a semicolon",
        "SELECT name FROM system.settings",
        "SELECT `format` FROM t",
    ],
)
def test_read_queries_pass_with_nothing_appended(sql: str) -> None:
    """The limits travel with the request (engine_settings), never as text after the query."""
    guarded = guard_query(sql, LIMITS)
    assert "SETTINGS" not in guarded.replace("'SETTINGS'", "")
    assert sql.startswith(guarded)


def test_readonly_is_the_last_setting_so_it_locks_the_others() -> None:
    settings = engine_settings(LIMITS)
    assert list(settings)[-1] == "readonly" and settings["readonly"] == 1
    assert settings["result_overflow_mode"] == "throw" and settings["max_result_rows"] == LIMITS.max_result_rows
    assert list(dashboard_settings(LIMITS))[-1] == "readonly"


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("INSERT INTO otel_traces VALUES (1)", "only read queries"),
        ("DROP TABLE otel_traces", "only read queries"),
        ("ALTER TABLE otel_traces DELETE WHERE 1", "only read queries"),
        ("SELECT 1 SETTINGS readonly=0", "SETTINGS"),
        ("SELECT * FROM (SELECT 1 SETTINGS readonly = 0)", "SETTINGS"),
        ("SELECT 1; DROP TABLE otel_traces", "one statement"),
        ("SELECT 1 FORMAT CSV", "FORMAT"),
        ("SELECT * FROM url('http://127.0.0.1/')", "table function"),
        ("SELECT * FROM file('/etc/passwd')", "table function"),
        ("SELECT 1 INTO OUTFILE '/tmp/x'", "OUTFILE"),
        ("", "empty"),
        ("   ;  ", "empty"),
        ("SELECT 'unterminated", "unterminated"),
        ("SELECT 1 /* open", "unterminated"),
        ("SELECT " + "1," * 2000 + "1", "longer than"),
        # ClickHouse comments nest and $$...$$ is a string: neither may hide SETTINGS from the guard.
        ("SELECT 1 /* /* */ ' */ SETTINGS readonly=0 --'", "SETTINGS"),
        ("SELECT $$'$$ SETTINGS readonly=0 --'", "SETTINGS"),
        ("SELECT $a b$'$a b$, * FROM file('x') --'", "table function"),
        ("SELECT 1 /* /* nested, open */", "unterminated"),
        ("SELECT $$;$$; DROP TABLE t", "one statement"),
    ],
)
def test_refused_queries_say_why(sql: str, reason: str) -> None:
    with pytest.raises(PermanentError, match=reason):
        guard_query(sql, LIMITS)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_guard_never_crashes_or_passes_a_second_statement(sql: str) -> None:
    try:
        guarded = guard_query(sql, LIMITS)
    except PermanentError:
        return
    assert guarded.split()[0].upper() in {"SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "EXISTS"}


@pytest.mark.parametrize(
    ("sql", "kept"),
    [
        ("SELECT 1; -- a comment after the statement", "SELECT 1"),
        ("SELECT 1 /* a /* nested */ comment */", "SELECT 1"),
        ("  SELECT $$;--$$  ;;", "SELECT $$;--$$"),
        ("SELECT 'it''s' # hash comment", "SELECT 'it''s'"),
    ],
)
def test_trailing_semicolons_and_comments_are_cut(sql: str, kept: str) -> None:
    assert guard_query(sql, LIMITS) == kept


@pytest.mark.parametrize(
    ("engine", "lead"),
    [
        ("Code: 159. DB::Exception: Timeout exceeded: elapsed 1 s. (TIMEOUT_EXCEEDED)", "time limit of 10 s"),
        ("Code: 159. DB::Exception: Timeout exceeded. (TIMEOUT_EXCEEDED) (version 25.8.1)", "time limit of 10 s"),
        ("Code: 396. DB::Exception: Limit for result exceeded. (TOO_MANY_ROWS_OR_BYTES)", "100000 rows"),
        ("Code: 241. DB::Exception: Query memory limit exceeded. (MEMORY_LIMIT_EXCEEDED)", "memory limit"),
        ("Code: 164. DB::Exception: Cannot execute query in readonly mode. (READONLY)", "read-only"),
    ],
)
def test_engine_limits_are_named_with_their_config_key(engine: str, lead: str) -> None:
    message = explain_engine_error(engine, LIMITS)
    assert lead in message and message.endswith(engine)


def test_other_engine_errors_pass_unchanged() -> None:
    engine = "Code: 60. DB::Exception: Unknown table expression identifier 'nope'. (UNKNOWN_TABLE)"
    assert explain_engine_error(engine, LIMITS) == engine
