"""Precision and recall of `spanscore redact` (contract C1) on the labelled set of issue #42.

    .venv/bin/python -m bench.redact.evaluate bench/redact/dev.jsonl --spanscore .venv/bin/spanscore [-- --policy X]
    .venv/bin/python -m bench.redact.evaluate bench/redact/dev.jsonl --findings out.jsonl

The second form scores a saved output of the command (one C1 output object a line), so the scoring can be
checked, and reused, without spanscore. The match rule is in match.py and README.md. Exits 2 when the command
fails or its output breaks the contract, since then no figure would mean anything.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.redact import placeholders
from bench.redact.match import KINDS, PROVIDER, Result, leaks, score

TARGET_RECALL = {"email": 0.98, "card": 0.98, "iban": 0.98, PROVIDER: 0.98}
TARGET_PRECISION = 0.95


class ContractError(Exception):
    """The command's output does not follow contract C1."""


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def run_command(cmd: list[str], records: list[dict[str, Any]], timeout: float) -> tuple[list[dict[str, Any]], float]:
    payload = "".join(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n" for r in records)
    began = time.perf_counter()
    proc = subprocess.run(cmd, input=payload, capture_output=True, text=True, timeout=timeout, check=False)
    elapsed = time.perf_counter() - began
    if proc.returncode != 0:
        raise ContractError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()], elapsed


def check_outputs(records: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
    """One output per input, same order and ids, offsets inside the text: otherwise scoring would be a guess."""
    if len(outputs) != len(records):
        raise ContractError(f"{len(records)} texts in, {len(outputs)} lines out")
    for rec, out in zip(records, outputs, strict=True):
        if out.get("id") != rec["id"]:
            raise ContractError(f"output for {rec['id']} came back as id {out.get('id')!r} (order or ids broken)")
        for f in out.get("findings", []):
            ok = (
                isinstance(f.get("start"), int) and isinstance(f.get("end"), int) and isinstance(f.get("detector"), str)
            )
            if not ok or not 0 <= f["start"] < f["end"] <= len(rec["text"]):
                raise ContractError(f"{rec['id']}: finding {f} is not a valid span of a {len(rec['text'])}-char text")


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


def report(result: Result, leaked: list[dict[str, Any]], marks: list[dict[str, Any]], show: int) -> list[str]:
    lines = [f"{'kind':22} {'labelled':>8} {'found':>6} {'recall':>7} {'findings':>8} {'correct':>7} {'precision':>9}"]
    extra = sorted(k for k in result.tallies if k not in (*KINDS, PROVIDER, "overall"))
    for key in (*KINDS, PROVIDER, *extra, "overall"):
        t = result.tallies[key]
        lines.append(
            f"{key:22} {t.labelled:8d} {t.found:6d} {_fmt(t.recall()):>7} {t.findings:8d} {t.correct:7d} "
            f"{_fmt(t.precision()):>9}"
        )
    lines.append("(overall: a finding of any detector that covers a labelled span counts; per kind: same kind only)")
    for key, target in TARGET_RECALL.items():
        r = result.tallies[key].recall()
        lines.append(f"target recall {key} >= {target}: {'met' if r is not None and r >= target else 'NOT met'}")
    p = result.tallies["overall"].precision()
    lines.append(
        f"target overall precision >= {TARGET_PRECISION}: {'met' if p is not None and p >= TARGET_PRECISION else 'NOT'}"
    )
    sections = [
        ("misses", result.misses),
        ("false positives", result.false_positives),
        ("right span, wrong kind", result.wrong_kind),
        ("labelled values still in the redacted text", leaked),
        ("placeholder problems (C1: <KIND_n>, same value same placeholder)", marks),
    ]
    for title, items in sections:
        lines.append(f"\n{title}: {len(items)}")
        lines += [f"  {json.dumps(item, ensure_ascii=False)}" for item in items[:show]]
        if len(items) > show:
            lines.append(f"  ... {len(items) - show} more (raise --show)")
    return lines


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("set_file", type=Path, help="dev.jsonl or holdout.jsonl")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--spanscore", help="path of the spanscore command to run (e.g. .venv/bin/spanscore)")
    src.add_argument("--findings", type=Path, help="JSONL of C1 output lines to score instead of running a command")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds the command may take for the whole set")
    p.add_argument("--show", type=int, default=200, help="how many misses/false positives to list")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    p.add_argument("extra", nargs="*", help="arguments after -- go to `spanscore redact` (e.g. --policy NAME)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    records = load_jsonl(args.set_file)
    elapsed = None
    try:
        if args.spanscore:
            outputs, elapsed = run_command([*shlex.split(args.spanscore), "redact", *args.extra], records, args.timeout)
        else:
            outputs = load_jsonl(args.findings)
        check_outputs(records, outputs)
    except (ContractError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        print(f"cannot score: {exc}", file=sys.stderr)
        return 2
    result = score(records, {o["id"]: o.get("findings", []) for o in outputs})
    pairs = [(rec, o) for rec, o in zip(records, outputs, strict=True) if "redacted" in o]
    leaked = [x for rec, o in pairs for x in leaks(rec, o["redacted"])]
    marks = [x for rec, o in pairs for x in placeholders.problems(rec["id"], rec["text"], o["redacted"], o["findings"])]
    if args.json:
        figures = {
            k: {
                "labelled": t.labelled,
                "found": t.found,
                "recall": t.recall(),
                "findings": t.findings,
                "correct": t.correct,
                "precision": t.precision(),
            }
            for k, t in result.tallies.items()
        }
        print(
            json.dumps(
                {
                    "set": str(args.set_file),
                    "texts": len(records),
                    "figures": figures,
                    "misses": result.misses,
                    "false_positives": result.false_positives,
                    "wrong_kind": result.wrong_kind,
                    "leaks": leaked,
                    "placeholder_problems": marks,
                    "seconds": elapsed,
                },
                ensure_ascii=False,
            )
        )
    else:
        print(f"set {args.set_file}: {len(records)} texts")
        if elapsed is not None:
            print(f"command wall time {elapsed:.2f} s for the set (process start included)")
        print("\n".join(report(result, leaked, marks, args.show)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
