#!/usr/bin/env python3
"""Measure how far answer_health agrees with a labelled set of agent runs.

Starts its own `spanscore serve` (default rule, temporary data dir, free loopback ports),
sends every case as real OTLP spans through the OpenTelemetry SDK (one trace per run),
waits until each run has an answer_health score, and prints agreement.

Only public surfaces are used: the CLI to start the service, OTLP/gRPC to send, and
POST /api/v1/query to read scores. Run it with the venv that has opentelemetry-sdk and
opentelemetry-exporter-otlp, e.g.
.venv/bin/python -m bench.answer_health.agreement --cases bench/answer_health/dev.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

SCORER = "answer_health"
KINDS = {
    "INTERNAL": SpanKind.INTERNAL,
    "CLIENT": SpanKind.CLIENT,
    "SERVER": SpanKind.SERVER,
    "PRODUCER": SpanKind.PRODUCER,
    "CONSUMER": SpanKind.CONSUMER,
}
STATUS = {"ERROR": StatusCode.ERROR, "OK": StatusCode.OK, "UNSET": StatusCode.UNSET}


def load_cases(path: str) -> list[dict]:
    cases = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            case = json.loads(line)
            for key in ("id", "class", "label", "spans"):
                if key not in case:
                    sys.exit(f"{path}:{n}: case has no {key!r}")
            if case["label"] not in ("pass", "fail"):
                sys.exit(f"{path}:{n}: label must be pass or fail, not {case['label']!r}")
            cases.append(case)
    ids = [c["id"] for c in cases]
    dup = [i for i, k in collections.Counter(ids).items() if k > 1]
    if dup:
        sys.exit(f"{path}: duplicate ids {dup}")
    return cases


# ------------------------------------------------------------------ the service
def free_port(taken: set[int]) -> int:
    """A port below 32768 (outside the usual ephemeral range) that binds now on loopback."""
    for _ in range(200):
        port = random.randint(20000, 32767)
        if port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise RuntimeError("no free loopback port found below 32768")


class Service:
    """One `spanscore serve` in a temporary directory; stopped by its own PID only."""

    def __init__(self, exe: str, quiet_s: float) -> None:
        self.exe, self.quiet_s = exe, quiet_s
        self.dir = tempfile.mkdtemp(prefix="labels38-")
        self.proc: subprocess.Popen | None = None

    def start(self, attempts: int = 4, boot_timeout_s: float = 120.0) -> None:
        taken: set[int] = set()
        for attempt in range(attempts):
            self.grpc, self.http, self.api = free_port(taken), free_port(taken), free_port(taken)
            cfg = os.path.join(self.dir, "spanscore.yaml")
            with open(cfg, "w") as f:
                f.write(
                    "collector:\n"
                    f"  grpc: {{host: 127.0.0.1, port: {self.grpc}}}\n"
                    f"  http: {{host: 127.0.0.1, port: {self.http}}}\n"
                    f"  runs: {{quiet_period_s: {self.quiet_s}}}\n"
                    "storage:\n"
                    f"  data_dir: {os.path.join(self.dir, 'data')}\n"
                    "api:\n"
                    f"  host: 127.0.0.1\n  port: {self.api}\n"
                    "scoring:\n  recover_on_start: false\n"
                )
            self.log = os.path.join(self.dir, f"serve-{attempt}.log")
            with open(self.log, "w") as out:
                self.proc = subprocess.Popen(
                    [self.exe, "serve", "-c", cfg],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self.dir,
                    start_new_session=True,
                )
            if self._wait_healthy(boot_timeout_s):
                return
            with open(self.log, encoding="utf-8", errors="replace") as f:
                text = f.read()
            self.stop()
            if "address already in use" in text.lower() or "errno 98" in text.lower():
                print(f"port clash, retrying with other ports ({attempt + 1}/{attempts})", file=sys.stderr)
                continue
            raise RuntimeError(f"spanscore serve did not become healthy; log tail:\n{text[-3000:]}")
        raise RuntimeError("spanscore serve kept hitting port clashes")

    def _wait_healthy(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.api}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        return False

    def query(self, sql: str) -> list[dict]:
        body = json.dumps({"sql": sql, "format": "json"}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.api}/api/v1/query",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["data"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # this PID only
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def cleanup(self, keep: bool) -> None:
        if keep:
            print(f"kept service dir {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------ sending
def _attrs(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if v is None:
            continue
        if isinstance(v, dict) or (isinstance(v, list) and not all(isinstance(x, (str, bool, int, float)) for x in v)):
            v = json.dumps(v)
        out[k] = v
    return out


def send_case(tracer, case: dict, base_ns: int) -> tuple[str, str]:
    """Emit the case's spans as one trace; returns (trace id hex, root span id hex)."""
    specs = case["spans"]
    step = 40_000_000  # 40 ms between span starts
    starts = [base_ns + i * step for i in range(len(specs))]
    ends = [s + step // 2 for s in starts]
    for i in reversed(range(len(specs))):  # a parent ends after its last descendant
        p = specs[i].get("parent")
        if p is not None:
            ends[p] = max(ends[p], ends[i] + 1_000_000)
    made = []
    for i, spec in enumerate(specs):
        p = spec.get("parent")
        ctx = Context() if p is None else trace.set_span_in_context(made[p])
        span = tracer.start_span(
            spec["name"],
            context=ctx,
            kind=KINDS[spec.get("kind", "INTERNAL")],
            attributes=_attrs(spec.get("attributes", {})),
            start_time=starts[i],
        )
        for ev in spec.get("events", []):
            span.add_event(ev["name"], attributes=_attrs(ev.get("attributes", {})), timestamp=ends[i] - 1000)
        st = spec.get("status")
        if st and st.get("code", "UNSET") != "UNSET":
            code = STATUS[st["code"]]
            span.set_status(Status(code, st.get("description") if code == StatusCode.ERROR else None))
        made.append(span)
    for i in reversed(range(len(made))):
        made[i].end(end_time=ends[i])
    root = made[0].get_span_context()
    return format(root.trace_id, "032x"), format(root.span_id, "016x")


def send_all(svc: Service, cases: list[dict]) -> dict[str, tuple[str, str]]:
    provider = TracerProvider(resource=Resource.create({"service.name": "labels38-agents"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"127.0.0.1:{svc.grpc}", insecure=True),
            max_export_batch_size=256,
            schedule_delay_millis=200,
        )
    )
    tracer = provider.get_tracer("labels38.agreement")
    now = time.time_ns()
    ids = {}
    for n, case in enumerate(cases):
        ids[case["id"]] = send_case(tracer, case, now - 60_000_000_000 + n * 10_000_000)
    if not provider.force_flush(60_000):
        raise RuntimeError("the OTLP exporter could not flush every span within 60 s")
    provider.shutdown()
    return ids


# ------------------------------------------------------------------ reading scores
def wait_scores(svc: Service, ids: dict[str, tuple[str, str]], timeout_s: float) -> tuple[dict, dict]:
    want = {tid for tid, _ in ids.values()}
    scores: dict[str, dict] = {}
    decisions: dict[str, list[str]] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        rows = svc.query(
            f"SELECT TraceId, SpanId, Score, Label, Reason, Status, Error FROM scores FINAL WHERE Scorer = '{SCORER}'"
        )
        for r in rows:
            if r["TraceId"] in want:
                scores[r["TraceId"]] = r
        if want <= scores.keys() or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    missing = want - scores.keys()
    if missing:
        rows = svc.query("SELECT TraceId, Decision, Reason FROM score_decisions")
        for r in rows:
            if r["TraceId"] in missing:
                decisions.setdefault(r["TraceId"], []).append(f"{r['Decision']}: {r['Reason']}")
    return scores, decisions


def _norm(value) -> str:
    """Whitespace-normalised text of a string or of a list of messages ({"role", "content"})."""
    if isinstance(value, list):
        value = " ".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in value)
    return " ".join(str(value or "").split())


def verify_runs(svc: Service, exe: str, cases: list[dict], ids: dict) -> None:
    """Print every case whose assembled run does not carry the case's question and answer (a set or harness bug)."""
    cfg = os.path.join(svc.dir, "spanscore.yaml")
    bad = 0
    for c in cases:
        if "question" not in c or "answer" not in c:
            continue
        out = subprocess.run(
            [exe, "runs", "show", "-c", cfg, "--format", "json", ids[c["id"]][0]],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=svc.dir,
        )
        try:
            shown = json.loads(out.stdout)
        except json.JSONDecodeError:
            print(f"verify {c['id']}: runs show gave no JSON: {out.stderr.strip()[:200]}", file=sys.stderr)
            bad += 1
            continue
        runs = shown if isinstance(shown, list) else shown.get("runs", [shown])
        run = runs[0] if runs else {}
        got_q, got_a = _norm(run.get("input")), _norm(run.get("answer", run.get("output")))
        if _norm(c["question"]) not in got_q or _norm(c["answer"]) != got_a:
            bad += 1
            print(
                f"verify {c['id']} ({c.get('convention')}): input={got_q[:80]!r} answer={got_a[:80]!r}", file=sys.stderr
            )
    print(f"verify-runs: {bad} of {len(cases)} runs differ from their case", file=sys.stderr)


def verdict(score) -> str | None:
    if score is None:
        return None
    return "pass" if float(score) >= 0.5 else "fail"


def report(cases, ids, scores, decisions, as_json: bool) -> dict:
    rows = []
    for c in cases:
        tid, _root_span = ids[c["id"]]
        s = scores.get(tid)
        got = verdict(s["Score"]) if s else None
        rows.append(
            {
                "id": c["id"],
                "class": c["class"],
                "label": c["label"],
                "convention": c.get("convention", ""),
                "trace_id": tid,
                "score": s["Score"] if s else None,
                "got": got,
                "reason": (s or {}).get("Reason", ""),
                "status": (s or {}).get("Status", ""),
                "decisions": decisions.get(tid, []),
                "agree": got == c["label"],
            }
        )
    scored = [r for r in rows if r["got"] is not None]
    agree = sum(r["agree"] for r in rows)
    per: dict = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        for key in (f"{r['class']}/{r['label']}", f"label:{r['label']}", f"convention:{r['convention']}"):
            per[key][0] += r["agree"]
            per[key][1] += 1
    summary = {
        "cases": len(rows),
        "scored": len(scored),
        "agree": agree,
        "agreement": round(agree / len(rows), 4) if rows else None,
        "healthy_failed": sum(r["label"] == "pass" and r["got"] == "fail" for r in rows),
        "broken_passed": sum(r["label"] == "fail" and r["got"] == "pass" for r in rows),
        "unscored": [r["id"] for r in rows if r["got"] is None],
        "per_group": {k: {"agree": v[0], "total": v[1]} for k, v in sorted(per.items())},
        "disagreements": [r for r in rows if not r["agree"]],
        "rows": rows,
    }
    if as_json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return summary
    print(f"agreement: {agree}/{len(rows)} ({100 * agree / max(1, len(rows)):.1f}%)  scored {len(scored)}/{len(rows)}")
    print(f"healthy runs failed: {summary['healthy_failed']}   broken runs passed: {summary['broken_passed']}")
    print("\nper class/label:")
    for k, v in summary["per_group"].items():
        if not k.startswith(("label:", "convention:")):
            print(f"  {k:<32} {v['agree']:>3}/{v['total']:<3}")
    print("per label / convention:")
    for k, v in summary["per_group"].items():
        if k.startswith(("label:", "convention:")):
            print(f"  {k:<32} {v['agree']:>3}/{v['total']:<3}")
    print("\ndisagreements:")
    for r in summary["disagreements"]:
        extra = f" decisions={r['decisions']}" if r["got"] is None else ""
        print(
            f"  {r['id']:<24} {r['class']:<20} label={r['label']:<4} score={r['score']} "
            f"reason={r['reason'][:160]!r}{extra}"
        )
    if summary["unscored"]:
        print(f"\nUNSCORED (harness or set bug): {summary['unscored']}")
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="JSONL file of labelled runs")
    ap.add_argument(
        "--spanscore",
        default=os.path.join(os.path.dirname(sys.executable), "spanscore"),
        help="the spanscore executable to serve",
    )
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for every score (default 120)")
    ap.add_argument("--quiet-period", type=float, default=0.5, help="collector.runs.quiet_period_s (default 0.5)")
    ap.add_argument("--only", default="", help="comma-separated case ids or classes to send")
    ap.add_argument(
        "--verify-runs",
        action="store_true",
        help="check with `spanscore runs show` that each run's assembled question and answer are the case's (slow)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the service's temporary directory (log, data)")
    args = ap.parse_args()
    cases = load_cases(args.cases)
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["id"] in keep or c["class"] in keep]
    if not cases:
        sys.exit("no cases to send")
    svc = Service(args.spanscore, args.quiet_period)
    try:
        print(f"starting {args.spanscore} serve in {svc.dir}", file=sys.stderr)
        svc.start()
        print(f"serving grpc={svc.grpc} api={svc.api} pid={svc.proc.pid}; sending {len(cases)} runs", file=sys.stderr)
        ids = send_all(svc, cases)
        scores, decisions = wait_scores(svc, ids, args.timeout)
        if args.verify_runs:
            verify_runs(svc, args.spanscore, cases, ids)
        summary = report(cases, ids, scores, decisions, args.json)
    finally:
        svc.stop()
        svc.cleanup(args.keep)
    return 0 if not summary["unscored"] else 2


if __name__ == "__main__":
    sys.exit(main())
