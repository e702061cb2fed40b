"""``python -m bench.ack_modes [--repeat 2] [--seconds 6] [--batch N] [--before DIR] [--out FILE]``.

The figures behind the choice of ``storage.acknowledge``: for ``stored`` and ``spooled``, the sustained
rate and the acknowledgement p50 / p99 at half that rate (gRPC, small spans, 100 and 1,000 spans per
request), each case on a fresh ``spanscore serve`` driven from a separate load process (``bench.suite``'s
ingest case, the same one ``bench.run`` uses), repeated ``--repeat`` times with the load average
beside each repetition. ``--stall`` adds the table from a ``python -m bench.decode_stall`` JSON output
(small exports and ``SELECT 1`` while a large export is handled). Nothing is asserted.

Every case runs twice: with one realistic rule (``RULE``: it selects none of the bench's traffic, so every
trace is still assembled and sampled, as in a deployment where most runs are not scored) and with
``rules: []``, the service's bare ingest. ``--before DIR`` runs every case also against the code in ``DIR``
(an exported older commit, put first on the service's PYTHONPATH), right before the same case on this tree,
so a change is compared with what it replaces in the same minutes.

The half-rate run starts right after the sustained one, so with a rule it also measures the service working off
what the overload left (run assembly's queue, readiness, the spool). ``--settle S`` first waits, at most ``S``
seconds, for the service's CPU to stay under a quarter of a core for two seconds: a service at half its capacity.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.suite import Plan, run_ingest_case
from spanscore.server.default_rules import DEFAULT_RULE

BATCHES = (100, 1000)
MODES = ("stored", "spooled")
TARGET_MS = 50.0
RULE: dict[str, object] = {
    "name": "bench-quality",
    "where": {"service.name": "bench-scored"},
    "sample": 0.1,
    "scorers": ["completeness"],
}
"""Scores a tenth of one service's runs; the bench's load comes from ``bench-agent``, so the rule selects none of
it (no scorer runs), but the service assembles every trace into its run and samples it."""
SELECTING_RULE: dict[str, object] = {
    "name": "bench-all",
    "where": {"service.name": "bench-agent"},
    "sample": 0.01,
    "scorers": ["completeness"],
}
"""Selects every run of the bench's load (``--rules selecting``): each is built in full and drawn, so a run cut at
the assembler's bounds shows as ``too_large`` (a run no rule selects is ``filtered_out`` whether cut or not). The
template repeats its trace ids' low bits, which the draw reads, so the same one trace of each request's hundred is
sampled (its run, of a root id unique to the request since session 28, is scored)."""
RULE_SETS: dict[str, list[dict[str, object]]] = {
    "rule": [RULE],
    "selecting": [SELECTING_RULE],
    "default": [DEFAULT_RULE],
    "none": [],
}
"""``default`` is what ``spanscore serve`` loads without a ``rules:`` key: ``answer_health`` on every run, so
every run is built in full, drawn and scored (the out-of-the-box service)."""


def _loadavg() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def measure(
    repeat: int,
    seconds: float,
    batches: tuple[int, ...],
    before: Path | None,
    rule_sets: list[str],
    modes: tuple[str, ...] = MODES,
    storage: dict[str, object] | None = None,
    before_storage: dict[str, object] | None = None,
    llm: bool = False,
    settle_s: float = 0.0,
) -> list[dict[str, Any]]:
    plan = Plan.make(quick=True, smoke=False)
    plan.seconds, plan.runs = seconds, 1
    plan.settle_s = settle_s
    trees: list[tuple[str, dict[str, str] | None, dict[str, object]]] = [("this", None, storage or {})]
    if before is not None or before_storage is not None:
        env = {"PYTHONPATH": str(before.resolve())} if before is not None else None
        trees.insert(0, ("before", env, before_storage if before_storage is not None else storage or {}))
    rows = []
    for attempt in range(repeat):
        for batch in batches:
            for mode in modes:
                for rules in rule_sets:
                    for tree, env, settings in trees:
                        rows.append(_one(plan, attempt, batch, mode, rules, tree, env, settings, llm))
    return rows


def _one(
    plan: Plan,
    attempt: int,
    batch: int,
    mode: str,
    rules: str,
    tree: str,
    env: dict[str, str] | None,
    storage: dict[str, object],
    llm: bool = False,
) -> dict[str, Any]:
    """One fresh service for one case; ``storage`` is merged over its storage settings; ``llm``: 5 KB spans."""
    load = _loadavg()
    print(f"{tree} x{batch}{' llm' if llm else ''} ack={mode} rules={rules} load {load}", file=sys.stderr)
    config: dict[str, object] = {"rules": RULE_SETS[rules], "storage": storage}
    case = run_ingest_case(plan, "grpc", llm, batch, lambda m: print(m, file=sys.stderr), mode, config=config, env=env)
    half = case["half_rate_runs"][0] if case["half_rate_runs"] else {}
    return {"attempt": attempt + 1, "batch": batch, "spans": "llm" if llm else "small", "acknowledge": mode,
            "rules": rules, "code": tree,
            "storage": storage,
            "load_average": load, "sustained_spans_per_s": case["runs"][0]["spans_per_s"],
            "sustained_p99_ms": case["runs"][0]["ack_p99_ms"],
            "service_cpu_share": case["service_cpu_share"],
            "half_rate_spans_per_s": half.get("spans_per_s", 0.0),
            "half_rate_requests": half.get("acked_requests", 0),
            "half_rate_p50_ms": half.get("ack_p50_ms", 0.0),
            "half_rate_p99_ms": half.get("ack_p99_ms", 0.0),
            "half_rate_settle_s": case.get("half_rate_settle_s"),
            "peak_rss_bytes": case["peak_rss_bytes"],
            "stored_equals_acked": case["stored_spans"] == case["acked_spans"],
            "decisions": case.get("decisions")}  # fmt: skip


def _ack_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| batch | ack after | rules | code | run | load avg (1/5/15) | sustained spans/s | half-rate spans/s | "
        "requests | ack p50 ms | ack p99 ms | p99 <= 50 ms | stored == acked | traces decided / stored (too_large) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=_key):
        verdict = "meets" if row["half_rate_p99_ms"] <= TARGET_MS else "misses"
        lines.append(
            f"| {_batch(row)} | {row['acknowledge']} | {row.get('rules', 'none')} | {row.get('code', 'this')} | "
            f"{row['attempt']} | {row['load_average']} | "
            f"{row['sustained_spans_per_s']:,.0f} | {row['half_rate_spans_per_s']:,.0f} | "
            f"{row['half_rate_requests']} | "
            f"{row['half_rate_p50_ms']:.1f} | {row['half_rate_p99_ms']:.1f} | {verdict} | "
            f"{'yes' if row['stored_equals_acked'] else 'NO'} | {_decided(row.get('decisions'))} |"
        )
    return lines


def _decided(decisions: dict[str, Any] | None) -> str:
    """Traces whose run the rule decided, of those stored, and how many were cut at the assembler's bounds."""
    if not decisions:
        return "-"
    too_large = decisions["by_decision"].get("too_large", 0)
    return f"{decisions['decided']:,} / {decisions['traces']:,} ({too_large:,})"


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (_batch(row), row["acknowledge"], row.get("rules", "none"), row.get("code", "this"), row["attempt"])


def _batch(row: dict[str, Any]) -> str:
    """Spans per request, and ``LLM`` for the 5 KB spans of ``--llm`` (rows from before it are small)."""
    return f"{row['batch']}{' LLM' if row.get('spans') == 'llm' else ''}"


def summary_table(rows: list[dict[str, Any]]) -> list[str]:
    """Min / median / max of the sustained rate and the half-rate p99 per case, and this tree's ratio to before."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_key(row)[:4], []).append(row)
    lines = [
        "| batch | ack after | rules | code | runs | sustained spans/s min / median / max | "
        "half-rate ack p99 ms min / median / max | median rate vs before | median p99 vs before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(groups):
        runs = groups[key]
        rate = [r["sustained_spans_per_s"] for r in runs]
        p99 = [r["half_rate_p99_ms"] for r in runs]
        before = groups.get((*key[:3], "before")) if key[3] != "before" else None
        ratios = ["", ""]
        if before:
            before_rate = statistics.median(r["sustained_spans_per_s"] for r in before)
            before_p99 = statistics.median(r["half_rate_p99_ms"] for r in before)
            ratios = [
                f"{statistics.median(rate) / max(before_rate, 1.0):.2f}x",
                f"{statistics.median(p99) / max(before_p99, 1e-9):.2f}x",
            ]
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {len(runs)} | "
            f"{min(rate):,.0f} / {statistics.median(rate):,.0f} / {max(rate):,.0f} | "
            f"{min(p99):.1f} / {statistics.median(p99):.1f} / {max(p99):.1f} | {ratios[0]} | {ratios[1]} |"
        )
    return lines


def _stall_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| large export | ack after | run | load avg before | large answered in s | gRPC export p50 / p99 ms | "
        "HTTP export p50 / p99 ms | SELECT 1 p50 / p99 ms | probe rounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for attempt, run in enumerate(runs, 1):
        load = " / ".join(f"{value:.2f}" for value in run["load_average"])
        for case in run["stall"]:
            kinds = ("grpc_export_ms", "http_export_ms", "select_1_ms")
            cells = [f"{case[k]['p50']} / {case[k]['p99']}" for k in kinds]
            lines.append(
                f"| {case['case']} ({case['large_body_mb']} MB, {case['large_spans']:,} spans) | "
                f"{case['acknowledge']} | {attempt} | {load} | {case['large_seconds']} | {' | '.join(cells)} | "
                f"{case['select_1_ms']['n']} |"
            )
    return lines


def render(rows: list[dict[str, Any]], stall_runs: list[dict[str, Any]], notes: str) -> str:
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# Acknowledgement modes: stored vs spooled",
        "",
        f"Generated by `python -m bench.ack_modes` on {date} ({os.cpu_count()} logical CPUs, shared with other "
        "engineers' tests: the load average is beside every figure, and differences under about 20% are noise). "
        "Benchmarks, not tests: nothing is asserted.",
        "",
        "## Summary per case (gRPC, small spans)",
        "",
        *summary_table(rows),
        "",
        "## Acknowledgement latency at half the sustained rate (gRPC, small spans, open-loop pacing)",
        "",
        *_ack_table(rows),
    ]
    if stall_runs:
        parts += ["", "## Small requests while a large export is handled (`python -m bench.decode_stall`)", "",
                  *_stall_table(stall_runs)]  # fmt: skip
    if notes:
        parts += ["", notes.strip()]
    return "\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2, help="repetitions of every case")
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds per sustained and per half-rate run")
    parser.add_argument("--stall", type=Path, action="append", default=[], help="bench.decode_stall JSON output")
    parser.add_argument("--notes", type=Path, help="markdown appended as it is (findings, recommendation)")
    parser.add_argument("--json", type=Path, help="write or (with --render) read the ack rows as JSON")
    parser.add_argument("--render", action="store_true", help="only render from --json, --stall and --notes")
    parser.add_argument(
        "--out", type=Path, help="write the rendered table here (docs/ack-modes.md is hand-kept: not by default)"
    )
    parser.add_argument("--batch", type=int, action="append", help="spans per request (default: 100 and 1000)")
    parser.add_argument("--rules", choices=sorted(RULE_SETS), action="append", help="rule sets (default: both)")
    parser.add_argument("--before", type=Path, help="an older tree to measure beside this one, case by case")
    parser.add_argument("--acknowledge", choices=MODES, action="append", help="modes (default: both)")
    parser.add_argument("--storage", type=json.loads, default={}, help="storage settings as JSON, e.g. '{\"a\": 1}'")
    parser.add_argument("--before-storage", type=json.loads, help="storage settings (JSON) of the 'before' rows")
    parser.add_argument("--llm", action="store_true", help="LLM-sized spans (about 5 KB of GenAI messages each)")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="before the half-rate run, wait up to this many seconds for the service to work off the sustained "
        "run's backlog (its CPU under a quarter of a core for 2 s); 0: start it at once",
    )
    args = parser.parse_args()
    if args.before is not None and not (args.before / "spanscore" / "__init__.py").is_file():
        parser.error(f"--before {args.before} holds no spanscore package (export a commit there first)")
    if args.render:
        rows = json.loads(args.json.read_text())
    else:
        modes = tuple(args.acknowledge or MODES)
        rule_sets = args.rules or ["rule", "none"]
        batches = tuple(args.batch or BATCHES)
        rows = measure(
            args.repeat, args.seconds, batches, args.before, rule_sets, modes, args.storage, args.before_storage,
            args.llm, args.settle,
        )  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    stall_runs = [json.loads(path.read_text()) for path in args.stall]
    notes = args.notes.read_text() if args.notes else ""
    rendered = render(rows, stall_runs, notes)
    if args.out is None:
        print(rendered)
        return
    args.out.write_text(rendered)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
