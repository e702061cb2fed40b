"""The parts of ``bench.fleet``: real ``spanscore serve`` replicas, a Keeper path each can be cut from, a judge.

Every replica is a child process of its own, so a fault is what an operator meets: ``kill -9`` (nothing
drained, nothing flushed), ``SIGSTOP``/``SIGCONT``, a Keeper connection cut at the TCP level. They share one
store through a ClickHouse stand-in (``spanscore.testing.clickhouse_standin``: the server protocol over
chDB, in a child of its own) as replicas share a ClickHouse server, and one real ZooKeeper.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import ClientSession, ClientTimeout, web

from spanscore.testing.ports import free_port

TOKENS_PER_CALL = 70  # the judge's usage: 50 in, 20 out
VERDICT = json.dumps({"verdicts": [{"verdict": "no", "reason": "polite"}]})


class Judge:
    """An OpenAI-compatible judge on loopback; each replica calls it under its own path, so calls are counted
    per replica, and by the answer judged (the bench numbers every run's answer)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.answers: Counter[str] = Counter()
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application(client_max_size=8 << 20)
        app.router.add_post("/{replica}/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        self.port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def url(self, replica: str) -> str:
        return f"http://127.0.0.1:{self.port}/{replica}/v1"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls[request.match_info["replica"]] += 1
        text = json.dumps(body.get("messages", []))
        marker = text.find("(run ")
        self.answers[text[marker : text.find(")", marker) + 1] if marker >= 0 else "?"] += 1
        message: dict[str, Any] = {"role": "assistant", "content": VERDICT}
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": VERDICT}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return web.json_response({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "judge"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": TOKENS_PER_CALL},
        })  # fmt: skip

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


class KeeperLink:
    """A TCP relay between one replica and ZooKeeper, which the bench can cut (a partition) and heal."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.cut = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)
        self._writers -= {writer, up_writer}

    def sever(self) -> None:
        """Drop every open connection and refuse new ones until ``heal``: the replica is cut from Keeper."""
        self.cut = True
        for writer in list(self._writers):
            writer.transport.abort()

    def heal(self) -> None:
        self.cut = False

    async def stop(self) -> None:
        self.sever()
        if self._server is not None:
            self._server.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.transport.abort()


@dataclass
class Replica:
    """One ``spanscore serve`` child process, its ports and its Keeper link."""

    name: str
    directory: Path
    link: KeeperLink
    grpc: int = field(default_factory=free_port)
    http: int = field(default_factory=free_port)
    api: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def write_config(self, settings: dict[str, Any]) -> Path:
        config = {
            **settings,
            "collector": {
                **settings["collector"],
                "grpc": {"host": "127.0.0.1", "port": self.grpc},
                "http": {"host": "127.0.0.1", "port": self.http},
            },
            "api": {"host": "127.0.0.1", "port": self.api},
            "storage": {**settings["storage"], "data_dir": str(self.directory)},
        }
        if "fleet" in settings:  # a process outside any fleet has no Keeper
            config["fleet"] = {**settings["fleet"], "keeper": f"127.0.0.1:{self.link.port}", "replica": self.name}
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "spanscore.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        return path

    def start(self, settings: dict[str, Any]) -> None:
        path = self.write_config(settings)
        log = (self.directory / "serve.log").open("ab")
        environ = {**os.environ, "OPENAI_API_KEY": "bench-key"}
        command = [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(path)]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environ)

    async def ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        async with ClientSession(timeout=ClientTimeout(total=2)) as http:
            while time.monotonic() < deadline and self.alive:
                try:
                    async with http.get(f"http://127.0.0.1:{self.api}/healthz") as answer:
                        if answer.status == 200:
                            return True
                except OSError:
                    pass
                except TimeoutError:
                    pass
                await asyncio.sleep(0.3)
        return False

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    async def kill(self) -> None:
        """``kill -9``: no drain, no flush, no hand-over; the process is gone when this returns."""
        self.signal(signal.SIGKILL)
        if self.process is not None:
            await asyncio.to_thread(self.process.wait, 30)

    async def stop(self, timeout_s: float = 60.0) -> None:
        """SIGTERM, as an orchestrator stops a pod; SIGKILL after ``timeout_s``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.signal(signal.SIGCONT)  # a paused replica cannot handle SIGTERM
        self.signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(self.process.wait, timeout_s)
        except subprocess.TimeoutExpired:
            await self.kill()

    def log_tail(self, lines: int = 20) -> str:
        path = self.directory / "serve.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
