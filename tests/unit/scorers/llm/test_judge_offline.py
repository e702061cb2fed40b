"""Nothing leaves the machine but the judge request (#32): every lookup and connect goes to the judge's host.

litellm fetches files from the internet on its own (its price table on import, Anthropic's beta-header
table on the first Anthropic call): on a network that drops outbound traffic each stalls a judgement, and
on any network the service talks to a host nobody configured. A fresh process per transport (the fetches
happen once per process) runs a faithfulness score against loopback Anthropic, Gemini and Ollama servers,
with an audit hook (``netguard/sitecustomize.py``) logging every name lookup and connect, in the judge
worker processes too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NETGUARD = Path(__file__).parent / "netguard"
ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("workers", [0, 1])
def test_a_judge_call_to_each_provider_touches_only_the_judge_host(tmp_path: Path, workers: int) -> None:
    log = tmp_path / "net.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_") and k != "PYTHONPATH"}
    env |= {"PYTHONPATH": f"{NETGUARD}{os.pathsep}{ROOT}", "SPANSCORE_TEST_NET_LOG": str(log)}
    done = subprocess.run(
        [sys.executable, str(NETGUARD / "judge_every_provider.py"), str(workers)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    scores = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(s["provider"], s["status"], s["score"]) for s in scores] == [
        ("anthropic", "ok", 0.67), ("anthropic", "ok", 0.67), ("gemini", "ok", 0.67), ("ollama", "ok", 0.67)
    ], scores  # fmt: skip
    # The mode on the wire and the price survive the trip back from a judge worker too.
    assert [(s["judge_mode"], s["cost"]) for s in scores] == [
        ("json_schema", "priced"), ("tool_call", "unknown"), ("json_mode", "unknown"), ("json_schema", "priced")
    ]  # fmt: skip
    judge_ports = {str(s["port"]) for s in scores}
    targets = {tuple(line.split()[1:]) for line in log.read_text().splitlines()}
    strangers = {(host, port) for host, port in targets if host != "127.0.0.1" or port not in judge_ports | {"0"}}
    assert not strangers, f"judge processes looked up or connected to hosts nobody configured: {sorted(strangers)}"
    callers = {int(line.split()[0]) for line in log.read_text().splitlines()}
    in_worker = callers - {scores[0]["pid"]}
    assert bool(in_worker) is bool(workers)  # with a worker, its own calls were seen (and checked) too
