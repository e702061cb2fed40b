"""``spanscore score --scorer faithfulness --judge-model ... --judge-api-base ...`` offline against the fake judge.

Both the fake judge and the command run as real processes; the only network is 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
# One reply that fits both faithfulness steps: claims for preprocess, verdicts for analyze.
REPLY = {
    "claims": ["The company had 100 employees in 2020.", "It has 500 now.", "It may reach 1000."],
    "verdicts": [{"verdict": "yes"}, {"verdict": "yes"}, {"verdict": "unsure"}],
}


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    command = [sys.executable, str(ROOT / "tests/fakes/fake_openai.py"), "--port", "0", "--reply", json.dumps(REPLY)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on" in line, line
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(timeout=10)


def score(args: list[str], runs: list[dict[str, object]], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    runs_file = tmp_path / "runs.jsonl"
    runs_file.write_text("".join(json.dumps(run) + "\n" for run in runs))
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    command = [sys.executable, "-c", "from spanscore.cli import main; raise SystemExit(main())", "score", *args]
    return subprocess.run([*command, str(runs_file)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


RUNS = [
    {
        "id": f"run-{index}",
        "input": "What's the company's growth like?",
        "output": "The company grew from 100 employees in 2020 to 500 now, and might reach 1000 next year.",
        "context": ["The company had 100 employees in 2020.", "Current employee count is approximately 500."],
    }
    for index in range(3)
]


def test_faithfulness_scores_offline_against_the_fake_judge(judge_url, tmp_path):
    flags = ["--scorer", "faithfulness", "--judge-model", "openai/judge", "--judge-api-base", judge_url, "--min"]
    result = score([*flags, "faithfulness=0.6"], RUNS, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["run-0", "run-1", "run-2"]
    assert all(line["status"] == "ok" and line["score"] == 0.67 for line in lines), lines
    assert "faithfulness: mean=0.6700 scored=3" in result.stderr


def test_threshold_failure_and_missing_context_through_the_command(judge_url, tmp_path):
    runs = [*RUNS[:1], {"id": "bare", "input": "q", "output": "An answer without any context."}]
    flags = ["--scorer", "faithfulness", "--judge-model", "openai/judge", "--judge-api-base", judge_url]
    result = score([*flags, "--min", "faithfulness=0.9"], runs, tmp_path)
    assert result.returncode == 1
    statuses = [json.loads(line)["status"] for line in result.stdout.splitlines()]
    assert statuses == ["ok", "missing_input"]


def test_bad_judge_flag_is_a_usage_error(tmp_path):
    result = score(
        ["--scorer", "faithfulness", "--judge-api-base", "http://127.0.0.1:1/v1", "--judge-model", ""], RUNS, tmp_path
    )
    assert result.returncode == 2
    # An empty model names no judge: refused before anything is read or sent, saying how to name one.
    assert "no judge model is configured" in result.stderr and "--judge-model" in result.stderr
    assert result.stdout == ""


def test_nothing_scored_is_a_failure_unless_errors_are_allowed(judge_url, tmp_path):
    bare = [{"id": "bare", "input": "q", "output": "An answer without any context."}]
    flags = ["--scorer", "faithfulness", "--judge-model", "openai/judge", "--judge-api-base", judge_url]
    result = score(flags, bare, tmp_path)
    assert result.returncode == 3
    assert "faithfulness: no run was scored (missing_input=1)" in result.stderr
    assert "--allow-errors" in result.stderr


def test_a_judge_error_fails_the_command(tmp_path):
    # Nothing listens on port 1: every judge call fails, every run is an error.
    flags = ["--scorer", "faithfulness", "--judge-model", "openai/judge", "--judge-api-base", "http://127.0.0.1:1/v1"]
    result = score([*flags, "--option", 'faithfulness.judge={"retries": 0}'], RUNS[:1], tmp_path)
    assert result.returncode == 3, result.stderr
    assert "faithfulness: 1 run(s) ended in error" in result.stderr
    allowed = score([*flags, "--allow-errors", "--option", 'faithfulness.judge={"retries": 0}'], RUNS[:1], tmp_path)
    assert allowed.returncode == 0 and "ended in error" in allowed.stderr
