"""Generate docs/reliability.md: each guarantee, the tests that prove it, the limits in force and the last figures.

Run ``python scripts/reliability_doc.py`` from the repository root (``--check`` exits 1 when the committed doc
differs). Nothing in the doc is typed by hand except the guarantees and their known limits below:

* the tests come from the test files themselves (read with ``ast``, nothing is imported or run): every test
  marked ``@pytest.mark.reliability("<guarantee>")``, plus the earlier tests listed in ``EARLIER_TESTS``; a
  test's line is its docstring's first line, with ``slow`` and the example count of property tests;
* the defaults are read from the config models (``ServiceConfig``, ``JudgeConfig``, ``ForwardConfig``);
* the figures are ``docs/reliability-figures.json``, written by the reliability tests when
  ``RELIABILITY_FIGURES_FILE`` names it:
  ``RELIABILITY_FIGURES_FILE=docs/reliability-figures.json pytest -m reliability`` (then regenerate).

``tests/unit/test_reliability_doc.py`` fails when the committed doc is not what this script writes.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reliability.md"
FIGURES = ROOT / "docs" / "reliability-figures.json"


@dataclass(frozen=True)
class Guarantee:
    key: str
    title: str
    statement: str
    limits: tuple[str, ...]


GUARANTEES = (
    Guarantee(
        "no-acknowledged-span-lost",
        "No acknowledged span is lost",
        "No acknowledged span is lost: an OK means the span is in storage or fsynced in the local spool, which is "
        "replayed in order when storage returns (also after a restart); SIGTERM drains, kill -9 loses nothing "
        "acknowledged. The spool is an append-only log: a batch is one record with its length and checksum, "
        "acknowledged after an `fdatasync` that covers it (one sync serves every batch written meanwhile); a "
        "record torn by a crash fails its checksum and is cut when the spool opens (it was never acknowledged), "
        "and a spool of one file per batch left by an earlier version replays first.",
        (
            "Exactly once, also across a crash: every batch (spans, logs, scores, decisions, scored runs) is "
            "deduplicated by the engine: a live insert by its block's content hash (so an exporter's retry of the "
            "same export is dropped too, and a batch spooled after a failed insert replays alone as that block), "
            "a batch written to the spool first by a random insert deduplication token kept in its log record "
            "(or, in a spool from before the log, its file's name); a "
            "replay that merges files records the files and the insert's token (`replay.intent`, fsynced) before "
            "the insert. Every retry carries the same token: after an insert that failed but landed, after an "
            "insert that failed part-way down a view chain (ClickHouse does not make the chain atomic), and after "
            "a kill -9 between a replayed insert and the synced DONE record that marks it inserted. Each table "
            "an insert reaches, the views' "
            "targets included, drops a token it has already taken (migration 0013). A batch whose spool sync "
            "failed is refused, so its exporters send it again, and this process never inserts it (a DONE record "
            "is written for it; only a crash before another sync carries that record leaves it to the next "
            "start, which stores it beside the retry). No I/O error ends the replay: it retries after a backoff, "
            "and `/healthz` names the error meanwhile.",
            "The window is 10,000 blocks per table (`non_replicated_deduplication_window` on the embedded engine; "
            "on a cluster `replicated_deduplication_window`, which ClickHouse also ages out after "
            "`replicated_deduplication_window_seconds`: 3,600 s by default in ClickHouse 26.9). A retry that "
            "comes after more blocks than that reached the table, or later than that on a cluster, is stored again: at "
            "least once, as before, never lost. One process inserts nothing into a table ahead of its spool, so "
            "only other writers of the same tables (replicas over one server, backfills) use up the window.",
            "A spool file written before tokens existed gets one when the spool opens; the pieces of a refused "
            "batch carry no token, and the engine compares their rows' hash instead (see the dead letters).",
            "A full spool (`storage.spool_max_bytes`) or `spool_max_bytes: 0` turns an outage into backpressure: "
            "exports are refused with a retry hint, never acknowledged.",
            "The ClickHouse server path is not exercised by an outage test: no server can run on the build machines. "
            "The 30 s outage makes the embedded engine fail for real (its disk is full); a server that hangs "
            "instead of refusing holds the writer for clickhouse-connect's own timeouts, which is not tested.",
            "The 30 s outage test needs permission to mount a tmpfs (root or CAP_SYS_ADMIN) and is skipped without.",
        ),
    ),
    Guarantee(
        "bounded-memory-backpressure",
        "Bounded memory, backpressure with retry hints",
        "Memory stays bounded under overload: past `storage.max_pending_spans` the receivers answer gRPC "
        "UNAVAILABLE with RetryInfo or HTTP 503 with Retry-After, so exporters retry instead of dropping. "
        "When scoring stays behind arrival, ingest does not wait on it: runs evicted from run assembly past the "
        "ready line's bounds are decided without scoring, each once (drawn as usual; a sampled draw is "
        '`too_large`, "scoring was behind"; `scoring_runs_shed`).',
        (
            "The gRPC listener takes calls on an event loop of its own, so a saturated service loop no longer "
            "leaves them in grpc core's queue of unrequested calls (answered CANCELLED after 30 s, without "
            "RetryInfo); the overload test now fails on any answer but a hinted refusal or an OK. A call taken "
            "still waits for the service loop to run its export, so under overload answers come late, within "
            "the exporters' timeout in the test.",
            "On OTLP/gRPC the token is checked before any of the message is read, and at most "
            "`collector.grpc.max_concurrent_reads` exports are read and decoded at once (others wait, reading "
            "nothing; calls beyond `max_concurrent_calls` get RESOURCE_EXHAUSTED). OTLP/HTTP bodies are read "
            "after the token check but not limited in number: each in-flight one holds its body (up to "
            "`collector.http.max_body_bytes`) while it waits to be decoded.",
            "The pending bound counts spans, not bytes: LLM-sized spans take more memory per pending span.",
            "Decoding is bounded by what it produces: a protobuf body over 1 MiB is parsed a piece at a time, a "
            "span or header too dense to parse alone (more than one message per 8 bytes) is refused by itself, "
            "and an OTLP/JSON body with more than one object per 16 bytes is refused before it is parsed. What "
            "remains is the rows themselves: ordinary small spans cost about 24 bytes per byte, LLM spans about "
            "7 (`bench/decode_amplification.py`, docs/security.md).",
            "The overload test runs with `max_pending_spans: 2000` (the default is 200,000) so that its load "
            "reaches the bound within seconds; the 2x offer lasts 60 s when these figures are recorded "
            "(30 s in CI runs).",
        ),
    ),
    Guarantee(
        "judge-failures-recorded",
        "Judge failures are recorded, never turned into scores",
        "A failing judge never produces a score: after retries (honouring Retry-After) and with a per-model "
        "circuit breaker, the run gets an `error` score row without a value and a `failed` decision; no job "
        "hangs and judge concurrency stays within `judge.max_concurrency`.",
        (
            "Job-level retries (`scoring.max_attempts`) back off on their own schedule and do not wait for the "
            "judge's hint (an open breaker's remaining cooldown or Retry-After): during an outage a job can spend "
            "its attempts against the open breaker within about a second and is recorded as failed.",
            "Runs recorded as failed are not scored again automatically once the judge recovers.",
        ),
    ),
    Guarantee(
        "bad-input-clear-error",
        "Bad input gets a clear error and changes nothing",
        "Bad input gets a clear error and changes nothing: undecodable OTLP -> 400 / INVALID_ARGUMENT, oversize "
        "-> 413 / RESOURCE_EXHAUSTED, a span or log record with ids of the wrong length, a time storage cannot "
        "hold (before 1970-01-02 or after 2106-02-07) or a value nested past `collector.limits.max_value_depth` "
        "-> refused alone with an OTLP partial success naming the field, events and links past their caps "
        "dropped while decoding (counted), a bad config or `where:` filter -> a ConfigError naming the key and the "
        "file; query text that is not a single read statement is refused. API bodies (rules, scores, query, "
        "backfill, dead-letter replay) are held to 64 levels of nesting, YAML aliases in them are refused, rule "
        "names are printable text, and filter regexes run on RE2, in time linear in the text (docs/security.md).",
        (
            "Filters are evaluated on the event loop; with RE2 their cost is linear in the attribute's length, "
            "and attribute values are bounded by `collector.limits`, but a rule with many regex conditions still "
            "costs that many passes per finished run.",
            "The config file is trusted: YAML aliases in it are expanded by the YAML parser without a size limit "
            "(only API bodies refuse them).",
        ),
    ),
    Guarantee(
        "keep-strangers-out",
        "Strangers are kept out",
        "Only holders of a configured bearer token may send or query (constant-time comparison, gRPC metadata "
        "keys read case-insensitively, separate tokens for the API); listeners bind to loopback by default and "
        "serve TLS when configured, and the OTLP receivers refuse to start beyond loopback without "
        "`collector.auth_tokens`. Browsers cannot be turned against the listeners: the API and the OTLP/HTTP "
        "receiver answer only Host names they know (one shared check: loopback names, IP literals, the bind "
        "address, `api.allowed_hosts` / `collector.http.allowed_hosts`; others get 421, so a name rebound to "
        "127.0.0.1 cannot export spans or evaluation scores), and the API refuses cross-origin "
        "requests (Origin, Sec-Fetch-Site) on every path, and takes queries only as JSON POSTs; `/metrics` "
        "needs the API token when tokens are set; config errors never repeat the value of a secret.",
        (
            "Tokens are static (config or environment); there is no rotation without a restart.",
            "No token is generated on first start (notebook servers do, but they run code): the browser attacks a "
            "generated token would stop are refused by the Host and Origin checks without one, and a generated "
            "token would have to reach the CLI, scripts and dashboard links through a file on disk. A token-less "
            "API on loopback stays open to every local user and program (read-only queries), so set "
            "`api.auth_tokens` on a shared machine; a non-loopback bind without tokens logs a warning at start.",
            "A token-less OTLP receiver on loopback takes spans from every local user and program; set "
            "`collector.auth_tokens` on a shared machine.",
        ),
    ),
    Guarantee(
        "token-opens-api-not-host",
        "A token opens the API, not the host",
        "Only the config file names code, addresses, files and credentials: a rule sent over the API cannot name "
        "a scorer by import path the config does not already name, a judge, a model, an endpoint or a key file; "
        "alert webhooks do not follow redirects; text from spans and requests is escaped in logs and terminal "
        "output (docs/security.md).",
        (
            "An API token holder can still replace the whole rule set (choose which registered scorers run, on "
            "what, how often), within the operator's judge and budgets: that is what the rules API is for.",
        ),
    ),
    Guarantee(
        "query-api-own-database",
        "The query API reads spanscore's database and nothing else",
        "The engine parses every API query (parseQueryToJSON, the text a bound parameter) and its tree must pass "
        "an allowlist: one SELECT (UNION, INTERSECT, EXCEPT, WITH), SHOW TABLES, DESCRIBE TABLE of a table in "
        "spanscore's database, EXPLAIN of a SELECT; no INTO OUTFILE, FORMAT or SETTINGS anywhere; table functions "
        "numbers, numbers_mt, zeros, zeros_mt and generate_series only; tables of spanscore's database (plus "
        "system.one, system.numbers, system.zeros); every function anywhere in the tree (arguments, lambdas, "
        "APPLY(f) and APPLY(x -> ...), subqueries, UNION arms) on an allowlist of pure functions, names resolved "
        "through the engine's case-insensitive names and aliases. What runs is the engine's canonical text of "
        "the query, only when it parses back to the checked tree, so whitespace, comments, quoting and case never "
        "reach the check; a SELECT runs as SELECT * FROM (canonical), which the result caps always bind. The "
        "limits (readonly, time, memory, result rows and bytes, threads, block size) are settings of the reader "
        "connections, readonly last, never text after the query, so they bind every part of it. Queries run on a "
        "pool of readers; one whose HTTP client goes away is killed, and the dashboard has a reader of its own.",
        (
            "On a server, the engine's access control is the first line: storage.query_dsn names a read-only user "
            "(deploy/clickhouse/query-user.sql) and the API refuses to start with a user that can write unless "
            "storage.query_allow_writable is true. The embedded engine has no users: the parse-tree check and "
            "the readers' readonly settings are what guard it.",
            "The engine checks the time limit and KILL QUERY between blocks only. Blocks of 1,024 rows keep that "
            "short for queries over rows (1.5 s at a 1 s limit; a cancel lands in 0.2 s), but one row's work cannot "
            "be stopped: a crafted query hashing a 3M-element array with 3,000 arguments per element ran 28 s at a "
            "1 s limit, and a larger array (up to what the memory limit holds) runs longer.",
            "A query cancelled in the instant between its last check and its start in the engine runs on to its "
            "time limit.",
            "The check needs the engine's parseQueryToJSON (present in the embedded engine, 26.9); on an older "
            "server every API query is refused with the engine's unknown-function error.",
        ),
    ),
    Guarantee(
        "bad-data-never-blocks-storage",
        "Data the engine refuses never stops storage",
        "A batch the engine refuses for what it holds is never retried as it is: engine errors are classified by "
        "their code (unavailable, timeout, memory, too many parts: retry; parse and type errors, too many "
        "partitions in one block: data), a refused batch is split by partition (day) and then bisected, every row "
        "the engine takes is stored, and the rows it still refuses go to a dead-letter file under "
        "`<spool_dir>/deadletter/<writer>/` with the engine's reason. Batches behind it flow on, also after a "
        'restart. `/healthz` answers 200 with `"status": "degraded"` and the reasons while rows are '
        "dead-lettered or a writer has retried for over `storage.stuck_after_s` (default 30 s); "
        "`spanscore status` and `/api/v1/status` count them "
        "(`<writer>_dead_lettered`, `<writer>_dead_letters_waiting`, `write_path_degraded`); "
        "`spanscore deadletter list|replay` shows and retries them. The span and log writers hand what they "
        "stored to run assembly, whose queue is bounded; a writer whose hand-ons waited half of the last minute "
        'or more is reported the same way ("inserts waited 85% of the last 60s for the stage after storage (run '
        'assembly, see runs_assembly_queued_records)"): the traffic is more than run assembly with your rules '
        "sustains, scores come late, and what the spool acknowledged waits to be stored "
        "(`spanscore_spans_handon_wait_seconds_total`; tests/unit/storage/test_handon_health.py).",
        (
            "`/healthz` stays 200 when degraded, by choice: the receivers still take and keep data, and a probe "
            "that restarted the process or took it out of rotation would not fix a dead letter. Alert on "
            '`"status": "degraded"` or `spanscore_write_path_degraded`.',
            "An engine error whose code is not known to be about the data (including an unknown code) is retried: "
            "when unsure, spanscore keeps the rows. Such a writer shows as stuck in `/healthz` after "
            "`storage.stuck_after_s` (30 s).",
            "Splitting costs inserts, only after a refusal: a batch of n rows with one refused row takes about "
            "2·log2(n) inserts. One salvage halves at most 64 refused pieces; past that, refused pieces are "
            "dead-lettered whole (good rows among them included, with the reason), so a batch of nothing but bad "
            "rows holds up the batches behind it for about 130 inserts, not 2n. `spanscore deadletter replay` "
            "splits them again.",
            "Rows are dead-lettered as the engine refused them; to discard them instead of replaying, delete "
            "their files under `<spool_dir>/deadletter/<writer>/` (`/healthz` is degraded until then).",
            "A salvage interrupted by a restart starts again from the whole batch: pieces are deterministic, so "
            "pieces already stored are dropped by block deduplication (every table keeps a window, migration "
            "0013), within the same 10,000 blocks as replays.",
            "A replayed dead letter is removed after its rows went back through the write path; a crash between "
            "the two replays it again.",
        ),
    ),
    Guarantee(
        "no-score-lost",
        "No score or decision is lost",
        "Scores and sampling decisions go through the same write path as spans: stored, or fsynced in their own spool "
        "(`<spool_dir>/scores`, `<spool_dir>/decisions`) while storage is down, and replayed after a restart or a "
        "kill -9. A storage outage of any length loses none; when the spool is full, scoring waits (score writes hold "
        "worker slots, ready runs wait in a bounded line, then in the assembler) and never drops. After a restart, "
        "every trace stored in the look-back (`max_wait_s` + `late_span_window_s`, ending at the latest span stored, "
        "so a long downtime does not hide it) that may hold an undecided run is decided: the latest traces at start, "
        "up to half of run assembly's bounds, the rest in waves as that half frees up, without evicting live traffic "
        "(`runs_recovery_waiting_traces`). Storage lists a trace when its latest span began after its latest "
        "decision, score or session turn was written, or when a run of it was sampled and not "
        "scored; a fleet survivor takes up a lost replica's traces the same way.",
        (
            "The listing compares the spans' start times (the client's clock) with the decisions' write times "
            "(this one's): a run that began after another of its trace was decided, on a client clock behind by "
            "more than the gap between the two, is not listed. A run sampled by two rules and scored by one is "
            "listed only while it has no score for the other. At most 200,000 traces are listed per restart, and "
            "the list is kept in memory: a second crash lists again from storage.",
            "The look-back ends at the latest span stored, read from the parts' min-max index; a span from a clock "
            "ahead of this one makes it end at the restart, as before (a downtime longer than the look-back then "
            "hides what the crash left).",
            "A listed trace that this process decided live after the restart, forgot (past "
            "`collector.runs.max_done_traces`) and whose decision was not yet written when its wave came, is "
            "decided a second time.",
            "A replayed score batch carries its first insert's token, so within the deduplication window it leaves "
            "no second raw row; beyond it, score rows are keyed by a deterministic id in a ReplacingMergeTree and a "
            "second raw row lasts until a merge: read with `FINAL` (as the reports and dashboard do).",
            "A score computed but not yet handed to the writer at a kill -9 is not in the spool; its `sampled` "
            "decision without a score is scored again by start-up recovery.",
        ),
    ),
    Guarantee(
        "no-request-stalls-others",
        "No request holds the others",
        "Export bodies over 64 KiB are parsed, turned into rows and limited in a decode thread (OTLP/JSON first "
        "becomes protobuf in a worker process at lower priority), not on the event loop, and an export of at "
        "least `storage.bulk_min_records` is written in a lane of its own (its own group commit, storage "
        "connection and spool write), so while a large export is decoded and stored the other listeners (small "
        "exports, the API) keep answering; every string of spans and logs is bounded (`collector.limits`), so one "
        "request cannot multiply its size in storage.",
        (
            "Measured by `bench/decode_stall.py` on 2 cores (docs/ack-modes.md): while an 8.7 MB or 30 MB export "
            "is handled, small exports kept a p99 of 22-50 ms and `SELECT 1` 11-41 ms under the default "
            "`acknowledge: spooled`. Under `acknowledge: stored` a small export's OK waits for its own insert: "
            "p99 60-94 ms during a large export, against 42-83 ms with none.",
            "The decode thread shares the GIL with the event loop; the service shortens the switch interval to "
            "1 ms and long C calls are cut into pieces (JSON is encoded 1,000 records at a time), but a full "
            "collection (about 20 ms) still stops every thread. Large requests are decoded one at a time, and each "
            "waiting one holds its body in memory.",
        ),
    ),
)

# Tests written before the `reliability` marker existed: file -> ((test function, guarantee), ...).
EARLIER_TESTS: dict[str, tuple[tuple[str, str], ...]] = {
    "tests/e2e/test_process.py": (
        ("test_sigterm_during_stream_keeps_every_acknowledged_span", "no-acknowledged-span-lost"),
        ("test_kill_9_mid_stream_loses_no_acknowledged_span", "no-acknowledged-span-lost"),
        ("test_bad_config_fails_fast_naming_key_and_file", "bad-input-clear-error"),
    ),
    "tests/e2e/test_storage_outage.py": (
        ("test_outage_mid_stream_loses_nothing_acknowledged", "no-acknowledged-span-lost"),
        ("test_spooled_spans_are_replayed_after_a_restart", "no-acknowledged-span-lost"),
        ("test_without_a_spool_an_outage_means_retry_later", "bounded-memory-backpressure"),
    ),
    "tests/e2e/test_http_json_and_errors.py": (
        ("test_grpc_oversize_and_backpressure", "bounded-memory-backpressure"),
        ("test_bad_http_input_is_refused_and_changes_nothing", "bad-input-clear-error"),
        ("test_bearer_tokens_on_both_receivers", "keep-strangers-out"),
    ),
    "tests/unit/storage/test_writer.py": (
        ("test_bounded_pending_refuses_with_retry_hint", "bounded-memory-backpressure"),
    ),
    "tests/unit/storage/test_spool.py": (
        ("test_a_full_spool_refuses_with_a_retry_hint", "bounded-memory-backpressure"),
    ),
    "tests/e2e/test_limits.py": (("test_limits", "bad-input-clear-error"),),
    "tests/unit/collector/test_decode.py": (
        ("test_arbitrary_bytes_never_crash_the_protobuf_decoder", "bad-input-clear-error"),
        ("test_arbitrary_json_never_crashes_the_json_decoder", "bad-input-clear-error"),
    ),
    "tests/unit/storage/test_guard.py": (
        ("test_guard_never_crashes_or_passes_a_second_statement", "bad-input-clear-error"),
    ),
    "tests/e2e/test_tls.py": (
        ("test_tls_on_every_listener", "keep-strangers-out"),
        ("test_query_api_token", "keep-strangers-out"),
    ),
}

# (config key, what it bounds); defaults are read from the models.
LIMIT_KEYS = (
    ("collector.grpc.max_message_bytes", "largest gRPC request; larger -> RESOURCE_EXHAUSTED"),
    ("collector.grpc.max_concurrent_reads", "gRPC exports read and decoded at once; the rest wait, reading nothing"),
    ("collector.http.max_body_bytes", "largest HTTP body, before and after gzip; larger -> 413"),
    ("collector.limits.max_spans_per_request", "more spans in one request refuses it whole"),
    ("collector.limits.max_attribute_value_chars", "longer values, log bodies, status messages truncated (counted)"),
    ("collector.limits.max_attributes_per_span", "further attributes in one set are dropped (counted)"),
    ("collector.limits.max_log_records_per_request", "more log records in one request refuses it whole"),
    ("collector.limits.max_resource_attribute_value_chars", "resource and scope values truncated (counted)"),
    ("collector.limits.max_name_chars", "names, keys, versions, severities, trace states truncated (counted)"),
    ("collector.limits.max_events_per_span", "further events of one span dropped while decoding (counted)"),
    ("collector.limits.max_links_per_span", "further links of one span dropped while decoding (counted)"),
    ("collector.limits.max_attributes_per_event", "further attributes of one event dropped while decoding (counted)"),
    ("collector.limits.max_attributes_per_link", "further attributes of one link dropped while decoding (counted)"),
    ("collector.limits.max_value_depth", "deeper nested attribute values or log bodies refuse their item"),
    (
        "collector.runs.max_pending_traces",
        "traces held for run assembly; the oldest settled trace is evicted first, else the oldest waiting one "
        "(its runs handed on early when their root arrived, else too_large)",
    ),
    ("collector.runs.max_pending_spans", "spans held for run assembly; evicts as above"),
    ("collector.runs.max_pending_bytes", "estimated bytes held for run assembly; evicts as above"),
    ("collector.runs.max_run_bytes", "estimated bytes of one trace; its later spans are dropped (too_large)"),
    ("storage.max_pending_spans", "spans waiting for storage; beyond it receivers answer retry later"),
    ("storage.batch_max_spans", "largest group-commit insert"),
    ("storage.min_free_disk_bytes", "free space below which inserts wait in the spool, so merges never fill the disk"),
    ("storage.spool_max_bytes", "local spool while storage is down; beyond it receivers answer retry later"),
    ("storage.query_max_execution_time_s", "time limit of an API query"),
    ("storage.query_max_memory_bytes", "memory cap of an API query"),
    ("storage.query_max_result_rows", "result-row cap of an API query"),
    ("storage.query_max_result_bytes", "result-size cap of an API query"),
    ("storage.query_max_bytes", "longest accepted query text"),
    ("storage.query_readers", "API queries running at once (the dashboard has one more reader)"),
    (
        "scoring.queue_size",
        "scoring jobs waiting for a worker; ready runs wait beside it (twice as many), then in run assembly",
    ),
    ("scoring.max_attempts", "attempts per scoring job for retryable failures"),
    ("scoring.drain_timeout_s", "how long running jobs may finish at shutdown"),
    ("judge.timeout_s", "one judge request"),
    ("judge.max_concurrency", "judge requests in flight per model"),
    ("judge.retries", "retries of a judge call after 429 / 5xx / timeouts"),
    ("judge.backoff_max_s", "largest backoff, also the cap on Retry-After"),
    ("judge.breaker_failures", "consecutive transient failures that open the breaker"),
    ("judge.breaker_cooldown_s", "how long an open breaker fails calls fast"),
    ("forward.max_in_flight", "concurrent pass-through requests"),
    ("shutdown_timeout_s", "how long SIGTERM may take to drain"),
)


@dataclass(frozen=True)
class TestEntry:
    path: str
    name: str
    guarantee: str
    summary: str
    slow: bool
    examples: int | None
    hypothesis: bool

    def line(self) -> str:
        tags = []
        if self.slow:
            tags.append("slow")
        if self.hypothesis:
            tags.append(f"property test, {self.examples} examples" if self.examples else "property test")
        suffix = f" ({'; '.join(tags)})" if tags else ""
        return f"- `{self.path}::{self.name}`{suffix}: {self.summary}"


def _call_name(node: ast.expr) -> str:
    """``pytest.mark.slow`` for ``@pytest.mark.slow`` and ``@pytest.mark.slow(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _examples(call: ast.Call, constants: dict[str, ast.expr]) -> int | None:
    for keyword in call.keywords:
        if keyword.arg == "max_examples":
            value = keyword.value
            if isinstance(value, ast.Name) and value.id in constants:
                value = constants[value.id]
            if isinstance(value, ast.Constant) and isinstance(value.value, int):
                return value.value
    return None


def _settings_examples(decorator: ast.expr, constants: dict[str, ast.expr]) -> int | None:
    if isinstance(decorator, ast.Name) and isinstance(constants.get(decorator.id), ast.Call):
        decorator = constants[decorator.id]
    if isinstance(decorator, ast.Call) and _call_name(decorator).endswith("settings"):
        return _examples(decorator, constants)
    return None


def _test_functions(path: Path) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def _entry(path: Path, function: ast.FunctionDef | ast.AsyncFunctionDef, guarantee: str) -> TestEntry:
    module = ast.parse(path.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value
        for node in module.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    names = [_call_name(d) for d in function.decorator_list]
    examples = next((n for d in function.decorator_list if (n := _settings_examples(d, constants)) is not None), None)
    docstring = ast.get_docstring(function) or ""
    summary = docstring.strip().splitlines()[0] if docstring.strip() else function.name.replace("_", " ")
    return TestEntry(
        path=path.relative_to(ROOT).as_posix(),
        name=function.name,
        guarantee=guarantee,
        summary=summary,
        slow="pytest.mark.slow" in names,
        examples=examples,
        hypothesis="given" in names,
    )


def collect_tests() -> list[TestEntry]:
    """Every marked test under tests/, then the earlier ones; raise on an unknown guarantee or a missing test."""
    known = {g.key for g in GUARANTEES}
    entries: list[TestEntry] = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for function in _test_functions(path).values():
            for decorator in function.decorator_list:
                if _call_name(decorator) != "pytest.mark.reliability" or not isinstance(decorator, ast.Call):
                    continue
                argument = decorator.args[0] if decorator.args else None
                if not isinstance(argument, ast.Constant) or argument.value not in known:
                    raise SystemExit(f"{path}::{function.name}: unknown reliability guarantee {ast.dump(argument)}")
                entries.append(_entry(path, function, str(argument.value)))
    for file, listed in EARLIER_TESTS.items():
        functions = _test_functions(ROOT / file)
        for name, guarantee in listed:
            if name not in functions:
                raise SystemExit(f"{file}::{name} is listed in EARLIER_TESTS but does not exist")
            entries.append(_entry(ROOT / file, functions[name], guarantee))
    return entries


def _default(path: str) -> Any:
    from spanscore.config import ServiceConfig
    from spanscore.export.forward import ForwardConfig
    from spanscore.scorers.judge.config import JudgeConfig

    section, _, rest = path.partition(".")
    if section == "judge":
        return JudgeConfig.model_fields[rest].default
    if section == "forward":
        return ForwardConfig.model_fields[rest].default
    value: Any = ServiceConfig()
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value:,} ({value >> 20} MiB)"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _figure(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_figure(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        shown = ", ".join(_figure(v) for v in value[:12])
        return f"{shown}, ..." if len(value) > 12 else (shown or "none")
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def render() -> str:
    tests = collect_tests()
    lines = [
        "# Reliability",
        "",
        "<!-- Generated by scripts/reliability_doc.py; edit the script or the tests, then run it. -->",
        "",
        "What spanscore promises when load, faults and bad input arrive, which tests prove each promise, the",
        "limits in force, and what the tests measured last. The tests run in CI (`slow` ones included), on",
        "loopback, each bounded in time and request count. Regenerate with `python scripts/reliability_doc.py`;",
        "refresh the figures first with",
        "`RELIABILITY_FIGURES_FILE=docs/reliability-figures.json pytest -m reliability`.",
        "",
        "## Guarantees",
        "",
    ]
    for number, guarantee in enumerate(GUARANTEES, 1):
        proving = [t for t in tests if t.guarantee == guarantee.key]
        lines += [f"### {number}. {guarantee.title}", "", guarantee.statement, "", "How it is tested:", ""]
        lines += [t.line() for t in proving] or ["- (no test yet)"]
        lines += ["", "Known limits:", ""]
        lines += [f"- {limit}" for limit in guarantee.limits]
        lines.append("")
    lines += ["## Limits and defaults", "", "| key | default | bounds |", "|---|---|---|"]
    lines += [f"| `{key}` | {_format(_default(key))} | {meaning} |" for key, meaning in LIMIT_KEYS]
    lines += ["", "## Last measured figures", ""]
    figures: dict[str, dict[str, Any]] = json.loads(FIGURES.read_text(encoding="utf-8")) if FIGURES.exists() else {}
    if not figures:
        lines += ["No figures recorded yet.", ""]
    for test, values in sorted(figures.items()):
        measured = f"{values.get('measured', '?')}, {values.get('machine', '?')}"
        lines += [f"### {test}", "", f"Measured {measured}.", "", "| figure | value |", "|---|---|"]
        lines += [
            f"| {key.replace('_', ' ')} | {_figure(value)} |"
            for key, value in values.items()
            if key not in ("measured", "machine")
        ]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/reliability.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print("docs/reliability.md is out of date: run python scripts/reliability_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
