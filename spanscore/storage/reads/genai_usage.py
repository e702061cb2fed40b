"""The dashboard's GenAI usage series: tokens and model-call latency per agent and model, from OTLP metrics.

Read from ``genai_usage_hour`` (migration 0016), which counts each call once whether the app exported its
``gen_ai.client.*`` histograms as deltas or cumulative. Buckets are hours, or UTC days over long windows, as
the score charts' are, so the usage chart shares their time axis. Agent is ``gen_ai.agent.name`` when the
metric carries it, else the service name.
"""

from __future__ import annotations

from typing import Any

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.dashboard import json_rows

USAGE_SQL = """
SELECT toUnixTimestamp(if({daily:Bool}, toStartOfDay(Bucket), Bucket)) AS time,
       Agent AS agent, Model AS model, ServiceName AS service_name,
       sum(Calls) AS calls, sum(InputTokens) AS input_tokens, sum(OutputTokens) AS output_tokens,
       sum(DurationSum) / nullIf(sum(Calls), 0) AS mean_duration_s
FROM genai_usage_hour
WHERE Bucket >= toStartOfHour(now() - toIntervalSecond({since:UInt32}))
GROUP BY time, agent, model, service_name
ORDER BY time, agent, model, service_name
LIMIT {limit:UInt32}
"""
MAX_ROWS = 5000
"""Points per answer at most: an hour or a day, per agent, model and service."""


async def genai_usage(store: ClickHouseStore, since_s: int, *, daily: bool) -> list[dict[str, Any]]:
    columns, rows = await store.read(USAGE_SQL, {"since": since_s, "daily": daily, "limit": MAX_ROWS})
    return json_rows(columns, rows)
