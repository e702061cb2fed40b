"""The read-only query guard: what the query API lets through, and with which limits.

Untrusted SQL is never spliced: it is checked, and the engine's own formatting of it runs on a
reader connection whose settings (``engine_settings``: ``readonly=1`` plus time, memory, result
and thread caps) come with the connection, never in the statement's text, so they bind every
SELECT of a UNION and every subquery. The checks here are only a cheap first filter that gives
clear errors; what a query is gets decided on the engine's own parse tree (``query_check``)
and, on a server, by a read-only user's grants. The tokenizer follows ClickHouse's lexer where it matters for
hiding text: nested ``/* */`` comments and ``$tag$...$tag$`` heredoc strings, so
nothing the engine reads as code looks like a comment or a string here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spanscore.errors import PermanentError

if TYPE_CHECKING:
    from spanscore.storage.config import StorageConfig

_READ_STATEMENTS = frozenset({"SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "EXISTS"})
# Table functions that reach files, other servers or programs: a query API must not be a proxy.
_BLOCKED_FUNCTIONS = frozenset(
    name.lower()
    for name in (
        "file fileCluster url urlCluster s3 s3Cluster gcs azureBlobStorage azureBlobStorageCluster hdfs "
        "hdfsCluster remote remoteSecure cluster clusterAllReplicas mysql postgresql sqlite mongodb redis "
        "jdbc odbc executable input iceberg deltaLake hudi python loop fuzzJSON"
    ).split()
)
_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>--[^\n]*|\#[^\n]*)
      | (?P<string>'(?:[^'\\]|\\.|'')*')
      | (?P<heredoc>\$(?P<tag>[^$]*)\$.*?\$(?P=tag)\$)
      | (?P<quoted>`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*")
      | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
# The engine names its error code in parentheses: "... (TIMEOUT_EXCEEDED)"; a server adds "(version ...)".
_ENGINE_CODE = re.compile(r"\(([A-Z][A-Z_]+)\)")


QUERY_FORMATS = {"json": "JSON", "jsoneachrow": "JSONEachRow", "csv": "CSVWithNames", "tsv": "TSVWithNames"}
"""The output formats a query may ask for, by the name the API takes, and the engine's name for each."""


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """Caps applied to every guarded query."""

    max_query_bytes: int = 65_536
    max_execution_time_s: float = 10.0
    max_memory_bytes: int = 1 << 30
    max_result_rows: int = 100_000
    max_result_bytes: int = 128 << 20
    max_threads: int = 2
    """Engine threads one query may use: a query API client does not get every core."""
    max_block_size: int = 1024
    """Rows per block. The engine checks its time limit and a KILL between blocks only, so small blocks
    keep a query's overrun past the limit, and a cancelled query's tail, short."""
    max_range_elements: int = 1_000_000
    """Elements ``range()`` may build in one block: an array that large is already seconds of work."""

    @classmethod
    def from_config(cls, storage: StorageConfig) -> QueryLimits:
        return cls(
            max_query_bytes=storage.query_max_bytes,
            max_execution_time_s=storage.query_max_execution_time_s,
            max_memory_bytes=storage.query_max_memory_bytes,
            max_result_rows=storage.query_max_result_rows,
            max_result_bytes=storage.query_max_result_bytes,
        )


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    end: int


def _tokens(sql: str) -> list[_Token]:
    """Tokens outside comments, with where each ends; raises on an unterminated string or comment."""
    tokens: list[_Token] = []
    position = 0
    while position < len(sql):
        if sql.startswith("/*", position):
            position = _comment_end(sql, position)
            continue
        match = _TOKEN.match(sql, position)
        assert match is not None  # the last alternative takes any single character
        position = match.end()
        kind = match.lastgroup or "other"
        if kind in ("space", "comment"):
            continue
        if kind == "other" and match.group() in ("'", "`", '"'):
            raise PermanentError("query has an unterminated quoted string")
        tokens.append(_Token(kind, match.group(), position))
    return tokens


def _comment_end(sql: str, start: int) -> int:
    """End of the ``/* */`` comment at ``start``; like ClickHouse, comments nest."""
    depth = 0
    position = start
    while position < len(sql) - 1:
        pair = sql[position : position + 2]
        if pair in ("/*", "*/"):
            depth += 1 if pair == "/*" else -1
            position += 2
            if depth == 0:
                return position
        else:
            position += 1
    raise PermanentError("query has an unterminated /* comment")


def guard_query(sql: str, limits: QueryLimits) -> str:
    """Check ``sql`` is one read statement and return it without trailing ``;`` and comments."""
    if len(sql.encode("utf-8")) > limits.max_query_bytes:
        raise PermanentError(
            f"query is longer than the limit of {limits.max_query_bytes} bytes (storage.query_max_bytes)"
        )
    found = _tokens(sql)
    while found and (found[-1].kind, found[-1].text) == ("other", ";"):
        found.pop()
    if not found:
        raise PermanentError("query is empty")
    # Cut after the last token: trailing ';' and comments go.
    body = sql[: found[-1].end].strip()
    tokens = [(token.kind, token.text) for token in found]
    if ("other", ";") in tokens:
        raise PermanentError("only one statement per query: remove the ';' between statements")
    first = tokens[0][1].upper()
    if tokens[0][0] != "word" or first not in _READ_STATEMENTS:
        raise PermanentError(f"only read queries are allowed (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN), got {first!r}")
    for index, (kind, text) in enumerate(tokens):
        if kind != "word":
            continue
        upper = text.upper()
        after_dot = index > 0 and tokens[index - 1] == ("other", ".")
        if upper == "SETTINGS" and not after_dot:
            raise PermanentError("queries may not carry SETTINGS: the query API sets readonly and its limits itself")
        if upper == "FORMAT" and not after_dot:
            raise PermanentError("queries may not carry FORMAT: choose the output format with the API's format option")
        if upper == "INTO" and index + 1 < len(tokens) and tokens[index + 1][1].upper() == "OUTFILE":
            raise PermanentError("INTO OUTFILE is not allowed")
        followed_by_paren = index + 1 < len(tokens) and tokens[index + 1] == ("other", "(")
        if followed_by_paren and not after_dot and text.lower() in _BLOCKED_FUNCTIONS:
            raise PermanentError(f"table function {text}() is not allowed in the query API")
    return body


def engine_settings(limits: QueryLimits) -> dict[str, int | float | str]:
    """The settings every untrusted query runs under, given to the engine with the request, not in its text.

    A ``SETTINGS`` clause in the text binds one SELECT of a UNION only; settings of the request (a
    session's on the embedded engine, the HTTP request's on a server) bind every SELECT and subquery.
    ``readonly`` comes last: once set, the session refuses any change, including to these limits.
    """
    return {
        "max_execution_time": _seconds(limits.max_execution_time_s),
        "timeout_overflow_mode": "throw",
        "max_memory_usage": limits.max_memory_bytes,
        "max_result_rows": limits.max_result_rows,
        "max_result_bytes": limits.max_result_bytes,
        "result_overflow_mode": "throw",
        "max_threads": limits.max_threads,
        "max_block_size": limits.max_block_size,
        "function_range_max_elements_in_block": limits.max_range_elements,
        "readonly": 1,
    }


def _seconds(value: float) -> int | float:
    """Whole seconds as an integer, as a server's ``system.settings`` shows them.

    A read-only user's client sends no setting that differs from what the server shows: ``10.0`` against
    the profile's ``10`` was refused as a change to a readonly setting, and the query API did not start.
    """
    return int(value) if float(value).is_integer() else value


def dashboard_settings(limits: QueryLimits) -> dict[str, int | float | str]:
    """The dashboard's reader: spanscore's own fixed SQL, so the time and memory limits but no result caps."""
    return {
        "max_execution_time": _seconds(limits.max_execution_time_s),
        "max_memory_usage": limits.max_memory_bytes,
        "max_threads": limits.max_threads,
        "readonly": 1,
    }


def explain_engine_error(message: str, limits: QueryLimits) -> str:
    """The engine's one-line refusal, led by which limit stopped the query and the key that sets it."""
    leads = {
        "TIMEOUT_EXCEEDED": f"query was cut at the time limit of {limits.max_execution_time_s:g} s "
        "(storage.query_max_execution_time_s); narrow the time range or read a roll-up view",
        "TOO_MANY_ROWS_OR_BYTES": f"query result is over the limit of {limits.max_result_rows} rows or "
        f"{limits.max_result_bytes} bytes (storage.query_max_result_rows, storage.query_max_result_bytes); "
        "add a LIMIT or aggregate",
        "MEMORY_LIMIT_EXCEEDED": f"query needs more than the memory limit of {limits.max_memory_bytes} bytes "
        "(storage.query_max_memory_bytes); aggregate over fewer rows or columns",
        "READONLY": "the query API is read-only",
    }
    for code in _ENGINE_CODE.findall(message):
        if code in leads:
            return f"{leads[code]}: {message}"
    return message
