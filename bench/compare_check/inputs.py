"""Edge and bad inputs for `spanscore report compare --scores-csv`: each must give a clear error (non-zero exit
naming the problem) or a sound answer (strict JSON, no NaN, the verdict the data forces).

    .venv/bin/python -m bench.compare_check.inputs --spanscore .venv/bin/spanscore
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.blind_cases import judge, report

HEADER = "version,scorer,value,inclusion_probability\n"


def _rows(version: str, values: list[float], prob: float = 0.5, scorer: str = "q") -> str:
    return "".join(f"{version},{scorer},{v},{prob}\n" for v in values)


def _strict_json(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def _verdict(out: Any, version: str) -> Any:
    return next(v.get("verdict") for s in out["scorers"] for v in s["versions"] if v["version"] == version)


# name, CSV text, baseline, what must hold: "error:<word>" (non-zero exit, stderr names <word>) or a check
CASES: list[tuple[str, str, str, str | Callable[[Any], bool]]] = [
    ("probability 0", HEADER + _rows("a", [1, 0] * 20) + "b,q,1,0\n", "a", "error:inclusion_probability"),
    ("probability above 1", HEADER + _rows("a", [1, 0] * 20) + "b,q,1,1.5\n", "a", "error:inclusion_probability"),
    ("value above 1", HEADER + _rows("a", [1, 0] * 20) + "b,q,1.2,0.5\n", "a", "error:value"),
    ("value not a number", HEADER + _rows("a", [1, 0] * 20) + "b,q,high,0.5\n", "a", "error:value"),
    ("missing column", "version,scorer,value\na,q,1\n", "a", "error:inclusion_probability"),
    ("baseline absent", HEADER + _rows("a", [1, 0] * 20), "zzz", "error:zzz"),
    ("header only", HEADER, "a", "error:"),
    ("one row for a version", HEADER + _rows("a", [1, 0] * 20) + "b,q,1,0.5\n", "a",
     lambda out: _verdict(out, "b") == "too_few"),
    ("no variance anywhere", HEADER + _rows("a", [1.0] * 40) + _rows("b", [1.0] * 40), "a",
     lambda out: _verdict(out, "b") in ("no_difference", "too_few")),
    ("all pass vs all fail, 60 each", HEADER + _rows("a", [1.0] * 60) + _rows("b", [0.0] * 60), "a",
     lambda out: _verdict(out, "b") == "worse"),
    ("pass rate 0.9 vs 0.5, 400 each", HEADER + _rows("a", [1.0] * 180 + [0.0] * 20) * 2
     + _rows("b", [1.0] * 100 + [0.0] * 100) * 2, "a", lambda out: _verdict(out, "b") == "worse"),
]  # fmt: skip


def run_case(cmd: list[str], tmp: Path, case: tuple[str, str, str, Any]) -> tuple[str, bool, str]:
    name, text, baseline, expect = case
    path = tmp / "case.csv"
    path.write_text(text)
    args = [*cmd, "report", "compare", "--scores-csv", str(path), "--by", "version", "--baseline", baseline]
    proc = subprocess.run([*args, "--format", "json"], capture_output=True, text=True, timeout=120, check=False)
    ok, detail = judge(proc, expect, _strict_json, lambda out: f"verdict {_verdict(out, 'b')!r}")
    return name, ok, detail


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spanscore", required=True)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="compare_inputs_") as tmp:
        return report((run_case(shlex.split(args.spanscore), Path(tmp), case) for case in CASES), 32)


if __name__ == "__main__":
    sys.exit(main())
