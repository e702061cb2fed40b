"""Run complete -> code-scorer score queryable, while background traffic is ingested.

A service runs with one rule (completeness on service ``bench-scored``) and
the default 2 s quiet period and 0.2 s poll interval. A load process sends
background spans at a paced rate (5,000 spans/s by default; traces of 10
small spans, 100 spans per gRPC request) that the rule filters out but the
assembler and sampler still see (one ``filtered_out`` decision per trace).
Every half second the probe sends one finished agent run (OTel GenAI
attributes), without waiting for earlier ones, and polls the query API every
50 ms for the scores of the runs still outstanding. The figure is seconds from
the root span's end to the score being queryable; the target is quiet period +
1 s at p95. One probe before the load starts warms the service up and is
reported apart, not counted. The load keeps up to 8 requests in flight, so a
slower acknowledgement does not lower the offered rate.

A score that takes over 20 s counts as a timeout in the figures, but the
window only bounds when probes are sent: if it closes before any run was
timed (a short window on a loaded machine), probing goes on until one is,
so the result always holds a sample unless the service is hung
(``HANG_TIMEOUT_S``). Exports likewise wait up to the hang bound.

    python -m bench.scoring_latency [--seconds 30] [--spans-per-second 5000] [--acknowledge spooled]
        [--spans-per-request 100]   # background spans per export (1,000: the ingest figures' request size)
        [--llm-calls 10]   # span-level: target: llm on runs of 10 LLM calls, plus a burst for jobs/s
        [--rules default]  # answer_health on every run, background included (the service without rules:)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bench.load import EXPORT_METHOD, run_load
from bench.service import HANG_TIMEOUT_S, ServiceProcess, more_samples
from spanscore.server.default_rules import DEFAULT_RULE

QUIET_PERIOD_S = 2.0
SAMPLE_TIMEOUT_S = 20.0
"""A score later than this after its run ended counts as a timeout (a figure, not an error)."""
POLL_INTERVAL_S = 0.05
PROBE_PAUSE_S = 0.5
LOAD_CONCURRENCY = 8
SPANS_PER_REQUEST = 100


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent_run_request(index: int, llm_calls: int = 0) -> tuple[bytes, str, float]:
    """One finished agent run (an invoke_agent span, with ``llm_calls`` chat spans under it), its span id and its
    end (Unix seconds)."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="bench-scored")))
    scope = resource.scope_spans.add()
    span = scope.spans.add()
    span.trace_id = os.urandom(16)
    span.span_id = os.urandom(8)
    span.name = "invoke_agent support"
    now = time.time_ns()
    span.start_time_unix_nano = now - 50_000_000
    span.end_time_unix_nano = now
    for key, value in (
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "support"),
        ("gen_ai.input.messages", _messages("user", f"How do I reset my password? ({index})")),
        ("gen_ai.output.messages", _messages("assistant", "Open Settings, then Security, then Reset password.")),
    ):
        span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    for call in range(llm_calls):
        child = scope.spans.add()
        child.trace_id, child.parent_span_id, child.span_id = span.trace_id, span.span_id, os.urandom(8)
        child.name = "chat model"
        child.start_time_unix_nano = now - 40_000_000 + call * 1_000_000
        child.end_time_unix_nano = child.start_time_unix_nano + 900_000
        for key, value in (
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", _messages("user", f"Step {call}: how do I reset my password? ({index})")),
            ("gen_ai.output.messages", _messages("assistant", f"Step {call}: open Settings, then Security.")),
        ):
            child.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    return request.SerializeToString(), span.span_id.hex(), now / 1e9


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile the rest of the suite uses; None without samples."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(
    seconds: float,
    spans_per_second: float,
    acknowledge: str = "stored",
    llm_calls: int = 0,
    spans_per_request: int = SPANS_PER_REQUEST,
    rules: str = "probe",
) -> dict[str, object]:
    """Start a service, warm it up with one probe, then probe for ``seconds`` under background load.

    ``rules``: ``probe`` scores only the probes' runs (the background is filtered out); ``default`` runs the rule
    ``spanscore serve`` loads without a ``rules:`` key (``answer_health`` on every run), so every background run
    is built in full, drawn and scored too: the out-of-the-box service's latency.

    With ``llm_calls`` each probe run has that many LLM call spans and the rule has ``target: llm``: a run
    counts as scored when every call has its score, and a burst of runs afterwards gives the span-level
    jobs/s the service sustains (``burst``).
    """
    rate = spans_per_second / spans_per_request
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-scoring-") as workdir:
        rule: dict[str, object] = {"name": "latency", "where": {"service.name": "bench-scored"}}
        rule["scorers"] = ["completeness"]
        if llm_calls:
            rule["target"] = "llm"
        extra: dict[str, object] = {"rules": [rule], "storage": {"acknowledge": acknowledge}}
        if rules == "default":
            extra["rules"] = [DEFAULT_RULE]
        spawn = multiprocessing.get_context("spawn")
        with ServiceProcess(Path(workdir), extra) as service, ProcessPoolExecutor(1, mp_context=spawn) as pool:
            warmup, _ = _probe(service, samples=1, seconds=SAMPLE_TIMEOUT_S, llm_calls=llm_calls)
            load = pool.submit(
                run_load,
                {
                    "transport": "grpc", "port": service.grpc_port, "spans_per_request": spans_per_request,
                    "llm": False, "seconds": seconds + 5, "max_requests": int((seconds + 5) * rate) + 1,
                    "rate": rate, "concurrency": LOAD_CONCURRENCY,
                },
            )  # fmt: skip
            time.sleep(min(2.0, seconds / 10))  # let the background reach its pace first
            latencies, timeouts = _probe(service, samples=None, seconds=seconds, llm_calls=llm_calls)
            background = load.result(timeout=seconds + HANG_TIMEOUT_S)
            burst = _burst(service, llm_calls) if llm_calls else None
    elapsed = float(str(background.get("elapsed_s") or 0))
    acked = int(str(background.get("acked_spans") or 0))
    return {
        "seconds": seconds,
        "acknowledge": acknowledge,
        "latencies_s": latencies,
        "warmup_s": warmup,
        "samples": len(latencies),
        "timeouts": timeouts,
        "p50_s": percentile(latencies, 0.50),
        "p95_s": percentile(latencies, 0.95),
        "target_p95_s": QUIET_PERIOD_S + 1.0,
        "quiet_period_s": QUIET_PERIOD_S,
        "background_offered_spans_per_s": spans_per_second,
        "background_spans_per_request": spans_per_request,
        "background_spans_acked": acked,
        "background_failed_requests": background.get("failed_requests"),
        "background_spans_per_s": round(acked / elapsed) if elapsed else 0,
        "llm_calls_per_run": llm_calls,
        "rules": rules,
        "burst": burst,
    }


BURST_RUNS = 100


def _burst(service: ServiceProcess, llm_calls: int) -> dict[str, object]:
    """Send ``BURST_RUNS`` runs at once (no background) and time until every call has its score: jobs/s."""
    channel = grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}")
    export = channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)
    before = _count_llm_scores(service)
    started = time.monotonic()
    try:
        for index in range(BURST_RUNS):
            export(agent_run_request(10_000 + index, llm_calls)[0], timeout=HANG_TIMEOUT_S)
    finally:
        channel.close()
    expected = before + BURST_RUNS * llm_calls
    while _count_llm_scores(service) < expected and time.monotonic() - started < HANG_TIMEOUT_S:
        time.sleep(POLL_INTERVAL_S)
    elapsed = time.monotonic() - started
    done = _count_llm_scores(service) - before
    return {
        "runs": BURST_RUNS,
        "jobs": done,
        "elapsed_s": round(elapsed, 2),
        "jobs_per_s": round(done / max(elapsed - QUIET_PERIOD_S, 1e-9), 1),
        "note": "elapsed includes the 2 s quiet period; jobs/s excludes it",
    }


def _count_llm_scores(service: ServiceProcess) -> int:
    rows = service.query("SELECT count() AS n FROM scores WHERE Target = 'llm'")
    return int(str(rows[0]["n"]))


def _probe(service: ServiceProcess, samples: int | None, seconds: float, llm_calls: int = 0) -> tuple[list[float], int]:
    """Send an agent run every ``PROBE_PAUSE_S`` and time each until its score counts; at most ``samples``.

    Runs overlap, so a slow score does not thin out the samples. Until one run is timed, probing goes on past
    both bounds (``more_samples``: at most ``HANG_TIMEOUT_S``); runs still outstanding at the end are given
    until their own ``SAMPLE_TIMEOUT_S`` before they count as timeouts.
    """
    channel = grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}")
    export = channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)
    latencies: list[float] = []
    timeouts = 0
    outstanding: dict[str, float] = {}  # span id -> the run's end (Unix seconds)
    begun = time.monotonic()
    sent = 0
    next_send = time.monotonic()
    try:
        while True:
            sending = (samples is None or sent < samples) and more_samples(begun, seconds, len(latencies))
            if not sending and not outstanding:
                break
            if sending and time.monotonic() >= next_send:
                body, span_id, ended = agent_run_request(sent, llm_calls)
                sent += 1
                export(body, timeout=HANG_TIMEOUT_S)
                outstanding[span_id] = ended
                next_send += PROBE_PAUSE_S
            found = _scored(service, list(outstanding), llm_calls) if outstanding else set()
            now = time.time()
            for span_id in list(outstanding):
                ended = outstanding[span_id]
                if span_id in found:
                    latencies.append(now - ended)
                    del outstanding[span_id]
                elif now > ended + SAMPLE_TIMEOUT_S:
                    timeouts += 1
                    del outstanding[span_id]
            time.sleep(POLL_INTERVAL_S)
    finally:
        channel.close()
    return latencies, timeouts


def _scored(service: ServiceProcess, span_ids: list[str], llm_calls: int = 0) -> set[str]:
    """Which of the runs ``span_ids`` (hex, generated here) have their score rows (every call's, for ``llm``)."""
    listed = ", ".join(f"'{span_id}'" for span_id in span_ids)
    if llm_calls:
        rows = service.query(
            "SELECT Attributes['run.id'] AS id FROM scores"
            f" WHERE Target = 'llm' AND Attributes['run.id'] IN ({listed})"
            f" GROUP BY id HAVING uniqExact(SpanId) >= {int(llm_calls)}"
        )
    else:
        rows = service.query(f"SELECT DISTINCT SpanId AS id FROM scores WHERE SpanId IN ({listed})")
    return {str(row["id"]) for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--spans-per-second", type=float, default=5000.0)
    parser.add_argument("--acknowledge", choices=["stored", "spooled"], default="stored")
    parser.add_argument("--llm-calls", type=int, default=0, help="LLM call spans per run, scored with target: llm")
    parser.add_argument(
        "--spans-per-request", type=int, default=SPANS_PER_REQUEST, help="background spans per export request"
    )
    parser.add_argument(
        "--rules", choices=["probe", "default"], default="probe", help="score the probes only, or every run"
    )
    args = parser.parse_args()
    if args.rules == "default" and args.llm_calls:
        parser.error("--rules default scores runs, not LLM calls: leave out --llm-calls")
    result = measure(
        args.seconds, args.spans_per_second, args.acknowledge, args.llm_calls, args.spans_per_request, args.rules
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
