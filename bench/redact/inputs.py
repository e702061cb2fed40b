"""Contract C1's edges for `spanscore redact`: bad lines are refused naming the line, odd texts are answered.

.venv/bin/python -m bench.redact.inputs --spanscore .venv/bin/spanscore
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from bench.blind_cases import judge, report
from bench.redact import placeholders

EMAIL = "lea.dubois@orange.fr"
EMOJI_TEXT = f"🙂🙂 mail {EMAIL} 👍"
REPEAT_TEXT = f"{EMAIL}, again {EMAIL}, and anna@web.de"


def _ok_line(i: int) -> str:
    return json.dumps({"id": f"t{i}", "text": f"text {i} without data"}) + "\n"


def _finding_text(out: list[dict[str, Any]], text: str) -> list[str]:
    return [text[f["start"] : f["end"]] for f in out[0]["findings"]]


# name, stdin, what must hold: "error:<word>" (non-zero exit, stderr names <word>) or a check of the output lines
CASES: list[tuple[str, str, str | Callable[[list[dict[str, Any]]], bool]]] = [
    ("line 2 is not JSON", _ok_line(1) + "{not json\n" + _ok_line(3), "error:line 2"),
    ("line 1 lacks text", json.dumps({"id": "x"}) + "\n", "error:line 1"),
    ("text is a number", _ok_line(1) + json.dumps({"id": "y", "text": 42}) + "\n", "error:line 2"),
    ("empty text", json.dumps({"id": "e", "text": ""}) + "\n", lambda out: out[0]["redacted"] == ""
     and out[0]["findings"] == []),
    ("emoji before the value: code-point offsets", json.dumps({"id": "u", "text": EMOJI_TEXT}) + "\n",
     lambda out: _finding_text(out, EMOJI_TEXT) == [EMAIL]),
    ("same value thrice: one placeholder", json.dumps({"id": "r", "text": REPEAT_TEXT}) + "\n",
     lambda out: len(out[0]["findings"]) == 3
     and placeholders.problems("r", REPEAT_TEXT, out[0]["redacted"], out[0]["findings"]) == []
     and out[0]["redacted"].count("<EMAIL_1>") == 2 and EMAIL not in out[0]["redacted"]),
    ("200 lines keep their order", "".join(_ok_line(i) for i in range(200)),
     lambda out: [o["id"] for o in out] == [f"t{i}" for i in range(200)]),
]  # fmt: skip


def _parse(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _describe(out: list[dict[str, Any]]) -> str:
    return f"{len(out)} lines, first {json.dumps(out[0], ensure_ascii=False)[:160]}"


def run_case(cmd: list[str], case: tuple[str, str, Any]) -> tuple[str, bool, str]:
    name, stdin, expect = case
    proc = subprocess.run([*cmd, "redact"], input=stdin, capture_output=True, text=True, timeout=120, check=False)
    ok, detail = judge(proc, expect, _parse, _describe)
    return name, ok, detail


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spanscore", required=True)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    return report((run_case(shlex.split(args.spanscore), case) for case in CASES), 44)


if __name__ == "__main__":
    sys.exit(main())
