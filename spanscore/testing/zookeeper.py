"""A real ZooKeeper server for fleet tests: the Debian ``zookeeper`` package's jar, started on loopback.

ClickHouse Keeper speaks the ZooKeeper protocol, so a standalone ZooKeeper stands in for it here. Each
pytest worker starts one server (about a second of JVM start) on a free port with its own data directory,
and stops that one process by its PID. Tests keep out of each other's way by using a fresh chroot path.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from spanscore.testing.ports import free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
CONF_DIR = Path("/etc/zookeeper/conf")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


def missing_reason() -> str | None:
    """Why no server can start here (scripts/test installs the package where it may), or None."""
    if shutil.which("java") is None:
        return "java is not installed (apt-get install zookeeper brings it)"
    if not ZOOKEEPER_JAR.is_file():
        return f"{ZOOKEEPER_JAR} is missing (apt-get install zookeeper)"
    return None


@dataclass
class ZooKeeperServer:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    directory: Path

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    def chroot(self) -> str:
        """A fresh connection string rooted at a path no other test uses (created, as a chroot must be)."""
        from kazoo.client import KazooClient

        root = f"/t{uuid.uuid4().hex[:12]}"
        client = KazooClient(self.hosts)
        client.start(timeout=10)
        try:
            client.ensure_path(root)
        finally:
            client.stop()
            client.close()
        return f"{self.hosts}{root}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)


def _free_port() -> int:
    return free_port()


def restart_wiped(server: ZooKeeperServer) -> ZooKeeperServer:
    """Stop ``server``, delete its data, and start a new one on the same port: a Keeper that lost its data."""
    server.stop()  # deletes its directory, data included
    return start_zookeeper(server.directory, port=server.port)


def start_zookeeper(directory: Path, *, timeout_s: float = 30.0, port: int = 0) -> ZooKeeperServer:
    """Start a standalone server on 127.0.0.1 (on ``port``, else a free one) and wait until it answers."""
    from kazoo.client import KazooClient

    directory.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    config = directory / "zoo.cfg"
    config.write_text(
        "\n".join(
            [
                "tickTime=500",  # short ticks: session expiry tests take seconds, not minutes
                f"dataDir={directory / 'data'}",
                f"clientPort={port}",
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "minSessionTimeout=1000",
                "maxSessionTimeout=60000",
                "",
            ]
        ),
        encoding="utf-8",
    )
    log = (directory / "server.log").open("wb")
    process = subprocess.Popen(
        [
            "java",
            "-Xmx128m",
            "-cp",
            f"{CONF_DIR}:{ZOOKEEPER_JAR}",
            f"-Dzookeeper.log.dir={directory}",
            MAIN_CLASS,
            str(config),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "JVMFLAGS": ""},
    )
    server = ZooKeeperServer("127.0.0.1", port, process, directory)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"zookeeper exited with {process.returncode}: {(directory / 'server.log').read_text()}")
        client = KazooClient(server.hosts, timeout=2.0)
        try:
            client.start(timeout=2.0)
            client.stop()
            client.close()
            return server
        except Exception:
            client.close()
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.2)
