-- Fewer, wider merges of the span tables (#43). The engine merges parts once about
-- merge_selector_base similar parts wait (5 by default); with inserts of a few thousand rows a second,
-- every stored span was rewritten about nine times within seconds (4.3 million rows in replaced parts
-- for 457,000 spans stored, parts at merge level 22), and background merges took 17-19 µs of CPU per
-- span, a third of the service's CPU. At 10 the same load rewrote each span about three times, merges
-- took 8.8-9.2 µs per span, and 3-8 active parts were left instead of 4-11 (bench.ack_modes' rule,
-- acknowledge stored, 1,000 spans per request; docs/benchmarks.md section 9). Merges change no row.
ALTER TABLE {database}.otel_traces MODIFY SETTING merge_selector_base = 10;

ALTER TABLE {database}.otel_traces_trace_id_ts MODIFY SETTING merge_selector_base = 10;
