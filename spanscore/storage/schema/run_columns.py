"""The columns a ``scores`` row and a ``score_decisions`` row both start with: when, and which run.

Migration 0003 places them in both tables with ``{run_columns}``, so the two tables say which run a row is
about in one way (``storage.scores.RunColumns`` is the same set on the Python side, with the write time).
"""

from __future__ import annotations

RUN_COLUMNS = (
    "Timestamp DateTime64(9) CODEC(Delta, ZSTD(1))",
    "RunTimestamp DateTime64(9) CODEC(Delta, ZSTD(1))",
    "TraceId String CODEC(ZSTD(1))",
    "SpanId String CODEC(ZSTD(1))",
    "RunId String CODEC(ZSTD(1))",
    "ServiceName LowCardinality(String) CODEC(ZSTD(1))",
    "AgentName LowCardinality(String) CODEC(ZSTD(1))",
)

FRAGMENTS = {"run_columns": ",\n    ".join(RUN_COLUMNS)}
