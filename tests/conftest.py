from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from spanscore.storage.connection import connect
from tests.e2e.alert_parts import Receiver
from tests.service_setup import make_service_config, new_database_name
from tests.zookeeper import ZooKeeperServer, missing_reason, start_zookeeper


@pytest.fixture(scope="session")
def chdb_dsn(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One embedded store per test process; each test gets its own database in it."""
    return f"chdb://{tmp_path_factory.mktemp('chdb').as_posix()}"


@pytest.fixture
def database_name() -> str:
    return new_database_name()


@pytest.fixture
def service_config(chdb_dsn: str, database_name: str, tmp_path: Path) -> ServiceConfig:
    return make_service_config(chdb_dsn, database_name, tmp_path)


@pytest.fixture
async def service(service_config: ServiceConfig) -> AsyncIterator[Service]:
    svc = Service(service_config)
    await svc.start()
    try:
        yield svc
    finally:
        await svc.shutdown()


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spanscore.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """One real ZooKeeper per test worker; tests take a fresh chroot with ``zookeeper.chroot()``."""
    reason = missing_reason()
    if reason is not None:
        pytest.skip(f"fleet test needs ZooKeeper: {reason}")
    server = start_zookeeper(tmp_path_factory.mktemp("zookeeper"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def engine(chdb_dsn: str) -> Iterator[Any]:
    """A plain connection to the test process's embedded engine (its parser, its grants), shared by a module."""
    client = connect(chdb_dsn, "default")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    """A webhook receiver on loopback that records every alert notification it gets."""
    made = Receiver()
    await made.start()
    yield made
    await made.stop()
