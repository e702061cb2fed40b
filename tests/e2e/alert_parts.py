"""Alert test parts: a webhook receiver on loopback that records what it gets, and score rows to seed a window."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from spanscore.storage.scores import ScoreRow, external_score_id


class Receiver:
    """A webhook endpoint that records every body and fails the first ``fail_first`` requests with 500."""

    def __init__(self, fail_first: int = 0) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.attempts = 0
        self._fail_first = fail_first
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/hook"

    async def _handle(self, request: web.Request) -> web.Response:
        self.attempts += 1
        if self.attempts <= self._fail_first:
            return web.Response(status=500)
        self.bodies.append(await request.json())
        return web.Response(status=202)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def score_rows(values: list[float], start: int, rate: float = 1.0) -> list[ScoreRow]:
    now = time.time_ns()
    return [
        ScoreRow(
            score_id=external_score_id("test", "", "faithfulness", f"{start + i:032x}", "1" * 16),
            run_timestamp_ns=now, trace_id=f"{start + i:032x}", span_id="1" * 16, run_id="r",
            service_name="support-bot", agent_name="a", model="", session_id="", user_id="", rule="support-quality",
            scorer="faithfulness", scorer_version="1", score=value, label="pass" if value >= 0.5 else "fail",
            reason="", status="ok", error="", sample_rate=rate, higher_is_better=True, judge_model="",
            input_tokens=0, output_tokens=0, cost_usd=0.0, duration_ms=0.0, ready_reason="quiet",
            run_duration_ms=0.0, run_error="",
        )
        for i, value in enumerate(values)
    ]  # fmt: skip
