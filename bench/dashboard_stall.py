"""How long the dashboard's reads hold the event loop when the store holds many score names (issue #37 item 6).

An application that names each feedback score differently (a question id in the name, say) fills ``scores`` with
names. Each dashboard page load reads the scorer list and the charts; before the fix every name came back, and
the rows were converted and JSON-encoded on the event loop that the receivers and ``/healthz`` share.

The bench starts a real ``spanscore serve``, posts ``--names`` distinct feedback names through the API (1,000 a
request), then loads the dashboard's five data endpoints at once, ``--loads`` times, while a probe asks
``/healthz`` every 20 ms. It prints the bytes each load returned and the probe's slowest answer.

    python -m bench.dashboard_stall --names 200000 --json

Run it with ``PYTHONPATH=<another checkout>`` to measure that code with the same bench.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.service import ServiceProcess, temp_workdir

ENDPOINTS = ("scorers", "trend", "worst", "coverage", "cost")


def _post(port: int, body: list[dict[str, Any]]) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/scores",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


def _seed(port: int, names: int) -> float:
    started = time.perf_counter()
    for first in range(0, names, 1000):
        batch = [
            {"trace_id": f"{index + 1:032x}", "name": f"q{index:07d}", "value": 1.0}
            for index in range(first, min(first + 1000, names))
        ]
        _post(port, batch)
    return time.perf_counter() - started


def _get(port: int, path: str) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/dashboard/{path}?since=24h", timeout=300) as answer:
        return len(answer.read())


class HealthProbe:
    """Asks /healthz every ``interval_s`` on a thread of its own and keeps the slowest answer."""

    def __init__(self, port: int, interval_s: float = 0.02) -> None:
        self._port, self._interval_s = port, interval_s
        self._stop = threading.Event()
        self.slowest_s = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{self._port}/healthz", timeout=120) as answer:
                answer.read()
            self.slowest_s = max(self.slowest_s, time.perf_counter() - started)
            self._stop.wait(self._interval_s)


def run(names: int, loads: int) -> dict[str, Any]:
    with temp_workdir("dashboard-stall-") as workdir, ServiceProcess(Path(workdir)) as service:
        seeded_s = _seed(service.api_port, names)
        results = []
        for _ in range(loads):
            with HealthProbe(service.api_port) as probe, ThreadPoolExecutor(len(ENDPOINTS)) as pool:
                started = time.perf_counter()
                sizes = list(pool.map(lambda path: _get(service.api_port, path), ENDPOINTS))
                elapsed = time.perf_counter() - started
            results.append(
                {"bytes": sum(sizes), "load_s": round(elapsed, 2), "healthz_max_s": round(probe.slowest_s, 3)}
            )
        return {"names": names, "seed_s": round(seeded_s, 1), "loads": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=200_000, help="distinct feedback names to post (default: 200000)")
    parser.add_argument("--loads", type=int, default=3, help="page loads to time (default: 3)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    result = run(args.names, args.loads)
    print(json.dumps(result, indent=2) if args.json else result)


if __name__ == "__main__":
    main()
