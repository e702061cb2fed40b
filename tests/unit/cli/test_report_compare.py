"""``spanscore report compare --scores-csv`` (contract C2): versions compared from a CSV, no service or store.

Issue #41 observed that comparing versions meant hand-written SQL: the command did not exist.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

HEADER = "version,scorer,value,inclusion_probability\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spanscore.cli", "report", "compare", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _csv(tmp_path: Path, rows: list[tuple[str, str, float, float]]) -> str:
    path = tmp_path / "scores.csv"
    path.write_text(HEADER + "".join(f"{v},{s},{x},{p}\n" for v, s, x, p in rows), "utf-8")
    return str(path)


def test_compare_from_csv_answers_the_contract_json(tmp_path: Path) -> None:
    rng = random.Random(1)
    rows = [("1.4.0", "correct", float(rng.random() < 0.6), 1.0) for _ in range(3000)]
    rows += [("1.5.0", "correct", float(rng.random() < 0.75), 0.2) for _ in range(600)]
    rows += [("1.4.0", "tone", rng.random(), 0.5) for _ in range(4)]
    rows += [("1.5.0", "tone", rng.random(), 0.5) for _ in range(4)]
    done = _run("--scores-csv", _csv(tmp_path, rows), "--by", "version", "--baseline", "1.4.0", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["by"], document["baseline"], document["confidence"]) == ("version", "1.4.0", 0.95)
    assert [s["scorer"] for s in document["scorers"]] == ["correct", "tone"]
    correct, tone = (s["versions"] for s in document["scorers"])
    keys = set("version n n_eff mean ci_low ci_high diff diff_low diff_high verdict n_needed".split())
    assert all(set(entry) == keys for entry in correct + tone)
    base, new = correct
    assert base["version"] == "1.4.0" and base["diff"] is None and base["verdict"] is None
    assert (new["version"], new["n"], new["verdict"]) == ("1.5.0", 600, "better")
    assert new["ci_low"] < new["mean"] < new["ci_high"] and new["diff_low"] > 0
    assert tone[1]["verdict"] == "too_few" and tone[1]["n_needed"] > 4


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("1.5.0,correct,1.5,1", "line 3: value 1.5 is outside [0, 1]"),
        ("1.5.0,correct,1,0", "line 3: inclusion_probability 0.0 is outside (0, 1]"),
        ("1.5.0,correct,yes,1", "line 3: value 'yes' is not a number"),
    ],
)
def test_a_bad_row_is_named_and_nothing_is_printed(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + "1.4.0,correct,1,1\n" + line + "\n", "utf-8")
    done = _run("--scores-csv", str(path), "--baseline", "1.4.0", "--format", "json")
    assert done.returncode != 0 and done.stdout == ""
    assert expected in done.stderr


def test_an_unknown_baseline_names_the_versions_there_are(tmp_path: Path) -> None:
    done = _run("--scores-csv", _csv(tmp_path, [("1.4.0", "s", 1.0, 1.0)]), "--baseline", "1.3.9")
    assert done.returncode != 0 and "1.3.9" in done.stderr and "1.4.0" in done.stderr


def test_table_and_csv_carry_the_verdict(tmp_path: Path) -> None:
    path = _csv(tmp_path, [("a", "s", 1.0, 1.0), ("a", "s", 0.0, 1.0), ("b", "s", 1.0, 0.5)])
    table = _run("--scores-csv", path, "--baseline", "a")
    assert table.returncode == 0 and "too_few" in table.stdout and "baseline a" in table.stdout
    flat = _run("--scores-csv", path, "--baseline", "a", "--format", "csv")
    assert flat.stdout.splitlines()[0].startswith("scorer,version,n,n_eff,mean,ci_low,ci_high,diff")
    verdict, needed = flat.stdout.splitlines()[2].split(",")[-2:]
    assert verdict == "too_few" and int(needed) > 1
