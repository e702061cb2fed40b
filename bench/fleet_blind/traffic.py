"""Multi-turn conversations through the real OTel SDK gRPC exporter, each trace routed by a hash of its id.

An export that fails (a killed or stopped replica) is sent again to the next live replica, as a Collector's
exporter would; only an export that returned SUCCESS counts as acknowledged.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from bench.fleet_blind.procs import Fleet, Replica
from spanscore.testing.traces import rag_traces


@dataclass
class Turn:
    session: str
    run: int
    trace: str
    spans: list[str]
    acked_by: str = ""
    acked_at: float = 0.0
    tried: list[str] = field(default_factory=list)
    root: str = ""  # the run's root span id: its RunId in score_decisions


def schedule(p: dict[str, float], tag: str) -> list[tuple[float, str, int]]:
    """(offset s, session, turn): sessions start spread over twice the fault offset, turns `turn_gap_s` apart."""
    rng = random.Random(p["seed"])
    spread = 2 * float(p["fault_at_s"])
    out = []
    for i in range(int(p["sessions"])):
        start = rng.uniform(0, spread)
        for k in range(int(p["turns"])):
            out.append((start + k * float(p["turn_gap_s"]) + rng.uniform(0, 0.2), f"{tag}-s{i}", k))
    return sorted(out)


class Sender:
    def __init__(self, fleet: Fleet, first_run: int) -> None:
        self.fleet = fleet
        self.turns: list[Turn] = []
        self._next = first_run
        self._lock = threading.Lock()
        self._exporters: dict[int, OTLPSpanExporter] = {}

    def _exporter(self, rep: Replica) -> OTLPSpanExporter:
        with self._lock:
            if rep.grpc not in self._exporters:
                self._exporters[rep.grpc] = OTLPSpanExporter(endpoint=f"127.0.0.1:{rep.grpc}", insecure=True, timeout=4)
            return self._exporters[rep.grpc]

    def send(self, session: str) -> None:
        with self._lock:
            run, self._next = self._next, self._next + 1
        spans = rag_traces(1, session=session, first=run, numbered=True)
        trace = format(spans[0].context.trace_id, "032x")
        turn = Turn(session, run, trace, [format(s.context.span_id, "016x") for s in spans])
        turn.root = next(format(s.context.span_id, "016x") for s in spans if s.parent is None)
        with self._lock:
            self.turns.append(turn)
        for _ in range(4):
            live = self.fleet.live()
            if not live:
                time.sleep(1)
                continue
            start = int(trace, 16) % len(live)
            order = live[start:] + live[:start]
            for rep in order:
                if rep.name in turn.tried and len(order) > 1:
                    continue
                turn.tried.append(rep.name)
                if self._exporter(rep).export(spans) == SpanExportResult.SUCCESS:
                    turn.acked_by, turn.acked_at = rep.name, time.time()
                    return
            turn.tried.clear()

    def run(self, plan: list[tuple[float, str, int]], t0: float) -> None:
        """Send the plan on its clock with a few concurrent exports; returns when every export ended."""
        with ThreadPoolExecutor(6) as pool:
            for offset, session, _ in plan:
                delay = t0 + offset - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(self.send, session)
        with self._lock:
            done, self._exporters = self._exporters, {}
        for exp in done.values():
            exp.shutdown()
