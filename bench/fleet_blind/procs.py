"""Real `spanscore serve` replicas, each with its own config file, one relay to ZooKeeper and one judge path."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bench.fleet_blind.judge import TOKENS_PER_CALL, FakeJudge
from bench.fleet_blind.relay import Relay

ROOT = Path(__file__).resolve().parents[2]
SPANSCORE = str(Path(sys.executable).parent / "spanscore")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: object, timeout_s: float, every_s: float = 0.25) -> None:
    """Poll `check()` until true; a generous bound, since the machine is shared and loaded."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:
            pass
        time.sleep(every_s)
    raise TimeoutError(f"{what} not within {timeout_s} s")


def rules(tag: str, budget_calls: int) -> list[dict[str, object]]:
    """One session rule (code scorer) and one judged run rule with a daily budget in calls' worth of tokens."""
    judged = {
        "name": "llm_judge",
        "options": {
            "id": f"blind_{tag}",
            "instructions": "Rate the answer.",
            "requires": ["output"],
            "analyze": {
                "prompt": "Answer: {output}",
                "schema": {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]},
            },
            "score": {"field": "score"},
        },
    }
    return [
        {"name": f"sess_{tag}", "target": "session", "scorers": ["turn_count"]},
        # every run is an override (`error` is never missing), so each one should be judged once, budget allowing
        {
            "name": f"judged_{tag}",
            "scorers": [judged],
            "always": {"where": {"error": {"exists": True}}},
            "budget": {"daily_tokens": budget_calls * TOKENS_PER_CALL},
        },
    ]


@dataclass
class Replica:
    name: str
    grpc: int
    api: int
    relay: Relay
    config: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    stopped: bool = False
    sent: int = field(default=0)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.api}/readyz", timeout=2) as r:
            return bool(r.status == 200)

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)


@dataclass
class Fleet:
    """Everything one scenario runs: its replicas over one stand-in store and one ZooKeeper."""

    workdir: Path
    store_port: int
    zk_port: int
    judge: FakeJudge
    tag: str
    session_timeout_s: float
    budget_calls: int
    replicas: list[Replica] = field(default_factory=list)

    def dsn(self, user: str) -> str:
        return f"clickhouse://{user}:CHANGE-ME@127.0.0.1:{self.store_port}/"

    def config(self, name: str, grpc: int, api: int, relay: Relay) -> dict[str, object]:
        return {
            "collector": {
                "grpc": {"port": grpc},
                "http": {"enabled": False},
                "runs": {"quiet_period_s": 0.5, "max_wait_s": 15},
                "sessions": {"quiet_period_s": 3},
            },
            "storage": {
                "dsn": self.dsn("spanscore_owner"),
                "query_dsn": self.dsn("spanscore_query"),
                "migrate": False,
                "acknowledge": "stored",
                "data_dir": str(self.workdir / name),
            },
            "api": {"port": api},
            "judge": {"model": "openai/blind-judge", "api_base": self.judge.base(name), "worker_processes": 0},
            "rules": rules(self.tag, self.budget_calls),
            "fleet": {
                "keeper": f"127.0.0.1:{relay.port}",
                "path": f"/blind/{self.tag}",
                "replica": name,
                "session_timeout_s": self.session_timeout_s,
                "expected_replicas": 3,
            },
            "log_level": "INFO",
        }

    def add(self, name: str) -> Replica:
        relay = Relay(self.zk_port)
        grpc, api = free_port(), free_port()
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(self.config(name, grpc, api, relay)))
        rep = Replica(name, grpc, api, relay, path, self.workdir / f"{name}.log", stopped=True)
        out = open(rep.log, "ab")
        rep.proc = subprocess.Popen([SPANSCORE, "serve", "-c", str(path)], stdout=out, stderr=out, cwd=self.workdir)
        self.replicas.append(rep)
        return rep

    def by_name(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    def start(self, names: list[str], timeout_s: float = 180.0) -> None:
        reps = [self.add(n) for n in names]
        for rep in reps:
            wait_for(f"{rep.name} ready", lambda r=rep: r.alive() and r.ready(), timeout_s)
            rep.stopped = False  # in rotation only once it says it is ready, as behind a readiness probe

    def live(self) -> list[Replica]:
        """Where traffic goes: started, not stopped by the harness, process alive."""
        return [r for r in self.replicas if r.alive() and not r.stopped]

    def shutdown(self) -> None:
        for rep in self.replicas:
            if rep.alive():
                assert rep.proc is not None
                os.kill(rep.proc.pid, signal.SIGCONT)
                rep.proc.terminate()
        for rep in self.replicas:
            if rep.proc is not None:
                try:
                    rep.proc.wait(60)
                except subprocess.TimeoutExpired:
                    rep.proc.kill()
                    rep.proc.wait(30)
            rep.relay.stop()


def migrate(workdir: Path, store_port: int) -> None:
    """Run `spanscore migrate` once as the owner, as the docs say a fleet needs before replicas start."""
    cfg = workdir / "migrate.yaml"
    cfg.write_text(
        json.dumps(
            {
                "storage": {
                    "dsn": f"clickhouse://spanscore_owner:CHANGE-ME@127.0.0.1:{store_port}/",
                    "data_dir": str(workdir / "migrate"),
                }
            }
        )
    )
    subprocess.run([SPANSCORE, "migrate", "-c", str(cfg)], check=True, cwd=workdir, timeout=600)
