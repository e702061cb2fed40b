-- Span intake: the writer sends a batch as JSON rows to this Null table and the engine
-- turns them into otel_traces rows. Parsing JSON in the engine (off the Python GIL) costs
-- a fraction of building the Native format in Python, which bounded ingest before.
-- Field names are those of spanscore.records.SpanRecord; times are Unix nanoseconds.
CREATE TABLE IF NOT EXISTS {database}.otel_traces_intake (
    trace_id String,
    span_id String,
    parent_span_id String,
    name String,
    kind String,
    start_time_ns UInt64,
    end_time_ns UInt64,
    service_name String,
    attributes Map(String, String),
    resource_attributes Map(String, String),
    status_code String,
    status_message String,
    trace_state String,
    scope_name String,
    scope_version String,
    events Array(Tuple(time_ns UInt64, name String, attributes Map(String, String))),
    links Array(Tuple(trace_id String, span_id String, trace_state String, attributes Map(String, String)))
) ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.otel_traces_intake_mv
TO {database}.otel_traces
AS SELECT
    fromUnixTimestamp64Nano(toInt64(start_time_ns)) AS Timestamp,
    trace_id AS TraceId,
    span_id AS SpanId,
    parent_span_id AS ParentSpanId,
    trace_state AS TraceState,
    name AS SpanName,
    kind AS SpanKind,
    service_name AS ServiceName,
    resource_attributes AS ResourceAttributes,
    scope_name AS ScopeName,
    scope_version AS ScopeVersion,
    attributes AS SpanAttributes,
    if(end_time_ns > start_time_ns, end_time_ns - start_time_ns, 0) AS Duration,
    status_code AS StatusCode,
    status_message AS StatusMessage,
    arrayMap(e -> fromUnixTimestamp64Nano(toInt64(e.time_ns)), events) AS `Events.Timestamp`,
    arrayMap(e -> e.name, events) AS `Events.Name`,
    arrayMap(e -> e.attributes, events) AS `Events.Attributes`,
    arrayMap(l -> l.trace_id, links) AS `Links.TraceId`,
    arrayMap(l -> l.span_id, links) AS `Links.SpanId`,
    arrayMap(l -> l.trace_state, links) AS `Links.TraceState`,
    arrayMap(l -> l.attributes, links) AS `Links.Attributes`
FROM {database}.otel_traces_intake;
