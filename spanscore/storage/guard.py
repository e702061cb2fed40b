"""The read-only query guard: what the query API lets through, and with which limits.

Untrusted SQL is never edited or spliced: it is checked and then run verbatim
with a ``SETTINGS`` clause that spanscore appends (``readonly=1`` plus time,
memory and result caps). Query-level settings are used rather than session
``SET`` because the embedded engine shares one session with the span writer.
The checks are a first line that gives clear errors; ``readonly=1`` is what the
engine enforces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spanscore.errors import PermanentError

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
      | (?P<comment>--[^\n]*|\#[^\n]*|/\*.*?\*/)
      | (?P<string>'(?:[^'\\]|\\.|'')*')
      | (?P<quoted>`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*")
      | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """Caps applied to every guarded query."""

    max_query_bytes: int = 65_536
    max_execution_time_s: float = 10.0
    max_memory_bytes: int = 1 << 30
    max_result_rows: int = 100_000


def _words(sql: str) -> list[tuple[str, str]]:
    """(kind, text) tokens outside comments; raises on an unterminated string or comment."""
    tokens: list[tuple[str, str]] = []
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "other"
        text = match.group()
        if kind in ("space", "comment"):
            continue
        if kind == "other" and text in ("'", "`", '"'):
            raise PermanentError("query has an unterminated quoted string")
        if kind == "other" and sql.startswith("/*", match.start()):
            raise PermanentError("query has an unterminated /* comment")
        tokens.append((kind, text))
    return tokens


def guard_query(sql: str, limits: QueryLimits) -> str:
    """Check ``sql`` is one read statement and return it with spanscore's settings appended."""
    if len(sql.encode("utf-8")) > limits.max_query_bytes:
        raise PermanentError(f"query is longer than the limit of {limits.max_query_bytes} bytes")
    body = sql.strip()
    tokens = _words(body)
    while tokens and tokens[-1] == ("other", ";"):
        tokens.pop()
        body = body.rstrip().removesuffix(";").rstrip()
    if not tokens:
        raise PermanentError("query is empty")
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
    settings = (
        f"readonly=1, max_execution_time={limits.max_execution_time_s:g}, "
        f"max_memory_usage={limits.max_memory_bytes}, max_result_rows={limits.max_result_rows}, "
        "result_overflow_mode='throw'"
    )
    return f"{body}\nSETTINGS {settings}"
