"""A loopback OpenAI-compatible judge that counts calls per (replica, run).

Each replica's config points `judge.api_base` at `/r/<replica>/v1`, so the path says who called; the run is
the unique `(run N)` marker of the answer the judge was shown. A run counted more than once (over all
replicas) was judged more than once: a second bill for the same run.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RUN_MARK = re.compile(r"\(run (\d+)\)")
TOKENS_PER_CALL = 100  # every answer reports 90 + 10 tokens, so a budget in tokens is a budget in calls


class FakeJudge:
    """Serve chat completions on 127.0.0.1; `calls[(replica, run)]` counts what was asked."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, int]] = Counter()
        self.unmarked: Counter[str] = Counter()
        self.times: list[tuple[float, str, int]] = []  # (wall clock, replica, run) of every call, for spend-at-a-time
        self._lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                replica = self.path.split("/")[2] if self.path.startswith("/r/") else "?"
                judge.record(replica, body.decode("utf-8", "replace"))
                answer = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "fake",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": json.dumps({"score": 1.0})},
                        }
                    ],
                    "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def base(self, replica: str) -> str:
        return f"http://127.0.0.1:{self.port}/r/{replica}/v1"

    def record(self, replica: str, text: str) -> None:
        runs = {int(m) for m in RUN_MARK.findall(text)}
        with self._lock:
            if not runs:
                self.unmarked[replica] += 1
            for run in runs:
                self.calls[(replica, run)] += 1
                self.times.append((time.time(), replica, run))

    def snapshot(self) -> Counter[tuple[str, int]]:
        with self._lock:
            return Counter(self.calls)

    def times_of(self, runs: set[int]) -> list[float]:
        """When each call about one of `runs` came in, in order."""
        with self._lock:
            return sorted(t for t, _, run in self.times if run in runs)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
