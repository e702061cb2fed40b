"""Run assembly cost per span, in-process: CPU seconds the assembler spends on each span.

The spans are what the load generator sends (``bench.payloads``), decoded as the
service decodes them: background traces of 10 small spans with plain
attributes, and LLM-sized GenAI chat spans. Each repetition feeds a fresh
``RunAssembler`` every span, then polls once after the quiet period so every
trace is assembled into its run (what the live loop does on the event loop).
``span_facts`` alone is timed too. CPU time, not wall time, and the minimum
over repetitions, because the figure is meant to be read on a loaded machine.

``--rule`` times instead what the bench's rule (``bench.ack_modes.RULE``, which
selects none of this traffic) costs per background span, in three parts: the
assembler's intake, readiness (``poll_ready``), and the decisions (the rule
engine plus a decision row per rule and run), once with every run built in full
(as before #43) and once with readiness asking the rule first
(``runs.selection``). The garbage collector is off while timing, so that the
parts do not take turns paying for its passes.

``--decisions`` times only the rule engine and the decision rows, with APIs
older trees have too (put a directory whose ``spanscore`` is an older tree's
first on ``PYTHONPATH`` to time that tree's).

``--bound`` times the intake once the assembler holds ``max_pending_traces``
traces, where every new trace evicts a ready one (also with older trees' APIs).

    python -m bench.assembly [--spans 20000] [--repetitions 7] [--rule | --decisions | --bound]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import time
from collections.abc import Callable

from bench.payloads import build_template
from spanscore.collector.conventions import span_facts
from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.records import SpanRecord
from spanscore.runs.assembly import runs_from_spans
from spanscore.runs.readiness import RunAssembler
from spanscore.sampling.engine import RuleEngine
from spanscore.sampling.rules import SamplingConfig
from spanscore.scoring.rows import decision_row
from spanscore.scoring.subject import Subject

SPANS_PER_REQUEST = 100


def decoded_spans(count: int, llm: bool) -> list[SpanRecord]:
    """``count`` spans in traces of 10, each request with its own trace ids, decoded as the receivers do."""
    template = build_template(SPANS_PER_REQUEST, llm)
    spans: list[SpanRecord] = []
    for sequence in range(max(1, count // SPANS_PER_REQUEST)):
        spans.extend(spans_from_request(parse_traces(template.encode(sequence), json_body=False)).items)
    return spans


def _assemble(spans: list[SpanRecord]) -> None:
    assembler = RunAssembler()
    now = time.time_ns()
    for start in range(0, len(spans), SPANS_PER_REQUEST):
        assembler.add_spans(spans[start : start + SPANS_PER_REQUEST], now)
    ready = assembler.poll_ready(now + int(assembler.config.quiet_period_s * 1e9) + 1)
    if len(ready) * 10 != len(spans):
        raise RuntimeError(f"expected one run per trace of 10 spans, got {len(ready)} for {len(spans)} spans")


def _facts(spans: list[SpanRecord]) -> None:
    for span in spans:
        span_facts(span)


def cpu_us_per_span(work: Callable[[list[SpanRecord]], None], spans: list[SpanRecord], repetitions: int) -> float:
    """Minimum over ``repetitions`` of process CPU microseconds per span."""
    best = float("inf")
    for _ in range(repetitions):
        started = time.process_time()
        work(spans)
        best = min(best, time.process_time() - started)
    return best / len(spans) * 1e6


def measure(spans: int, repetitions: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, llm in (("background", False), ("genai_llm", True)):
        decoded = decoded_spans(spans if not llm else max(1000, spans // 10), llm)
        out[f"{label}_assembly_cpu_us_per_span"] = round(cpu_us_per_span(_assemble, decoded, repetitions), 2)
        out[f"{label}_span_facts_cpu_us_per_span"] = round(cpu_us_per_span(_facts, decoded, repetitions), 2)
    return out


def _rule_path(spans: list[SpanRecord], engine: RuleEngine, select: bool) -> tuple[float, float, float]:
    """CPU seconds of intake, readiness and decisions for ``spans`` under ``engine``'s rules."""
    from spanscore.runs.selection import run_selector  # here: ``--decisions`` also runs against older trees

    assembler = RunAssembler()
    if select:
        assembler.selects = run_selector(engine.config.rules, assembler.config)
    now = time.time_ns()
    started = time.process_time()
    for start in range(0, len(spans), SPANS_PER_REQUEST):
        assembler.add_spans(spans[start : start + SPANS_PER_REQUEST], now)
    added = time.process_time()
    ready = assembler.poll_ready(now + int(assembler.config.quiet_period_s * 1e9) + 1)
    polled = time.process_time()
    rows = [
        decision_row(decision, Subject(item.run, item.reason, item.fingerprint))
        for item in ready
        for decision in RuleEngine(engine.config).decide(item.run)
    ]
    decided = time.process_time()
    if len(rows) * 10 != len(spans):
        raise RuntimeError(f"expected one decision per trace of 10 spans, got {len(rows)} for {len(spans)} spans")
    return added - started, polled - added, decided - polled


def measure_rule(spans: int, repetitions: int) -> dict[str, float]:
    """Per background span, µs of CPU: intake, readiness, decisions; every run built vs only selectable ones."""
    from bench.ack_modes import RULE

    decoded = decoded_spans(spans, llm=False)
    engine = RuleEngine(SamplingConfig.model_validate({"rules": [RULE]}))
    out: dict[str, float] = {}
    gc.disable()
    try:
        for label, select in (("every_run_built", False), ("selectable_runs_built", True)):
            best = [float("inf")] * 3
            for _ in range(repetitions):
                best = [min(old, new) for old, new in zip(best, _rule_path(decoded, engine, select), strict=True)]
            for part, seconds in zip(("intake", "readiness", "decisions"), best, strict=True):
                out[f"{label}_{part}_cpu_us_per_span"] = round(seconds / len(decoded) * 1e6, 2)
    finally:
        gc.enable()
    return out


def measure_decisions(spans: int, repetitions: int) -> dict[str, float]:
    """Per background span, µs of CPU the rule engine and the decision rows take (the bench's rule, GC off).

    Only APIs older trees have too, so that ``PYTHONPATH=<a directory holding an older tree's spanscore>``
    times that tree's rows beside this one's.
    """
    from bench.ack_modes import RULE

    runs = runs_from_spans(decoded_spans(spans, llm=False))
    config = SamplingConfig.model_validate({"rules": [RULE]})
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repetitions):
            started = time.process_time()
            for run in runs:
                for decision in RuleEngine(config).decide(run):
                    decision_row(decision, Subject(run, "quiet_period"))
            best = min(best, time.process_time() - started)
    finally:
        gc.enable()
    return {"decisions_cpu_us_per_span": round(best / spans * 1e6, 2)}


def measure_bound(repetitions: int) -> dict[str, float]:
    """µs of CPU per span of the assembler's intake once it holds ``max_pending_traces`` traces (GC off).

    160 requests of 1,000 background spans, 50 ms apart, each followed by a readiness poll: after 100 of them
    every new trace evicts a ready one. Logging goes to a stream on /dev/null formatted as the service formats
    it, so what an eviction logs is paid as in the service. Only APIs older trees have too.
    """
    from spanscore.cli.logs import EscapingFormatter

    handler = logging.StreamHandler(open(os.devnull, "w"))  # open for as long as the process runs
    handler.setFormatter(EscapingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level="INFO", handlers=[handler], force=True)
    template = build_template(1000, llm=False)
    batches = [spans_from_request(parse_traces(template.encode(i), json_body=False)).items for i in range(160)]
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repetitions):
            assembler, now, cpu, counted = RunAssembler(), 0, 0.0, 0
            for index, batch in enumerate(batches):
                now += 50_000_000
                started = time.process_time()
                assembler.add_spans(batch, now)
                if index >= 110:
                    cpu, counted = cpu + time.process_time() - started, counted + len(batch)
                assembler.poll_ready(now)
            best = min(best, cpu / counted)
    finally:
        gc.enable()
    return {"intake_at_the_trace_bound_cpu_us_per_span": round(best * 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--rule", action="store_true", help="the bench rule's cost per span, before and after #43")
    parser.add_argument("--decisions", action="store_true", help="only the rule engine and the decision rows")
    parser.add_argument("--bound", action="store_true", help="the intake once max_pending_traces is reached")
    args = parser.parse_args()
    if args.bound:
        result = measure_bound(args.repetitions)
    elif args.decisions:
        result = measure_decisions(args.spans, args.repetitions)
    elif args.rule:
        result = measure_rule(args.spans, args.repetitions)
    else:
        result = measure(args.spans, args.repetitions)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
