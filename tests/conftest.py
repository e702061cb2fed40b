from __future__ import annotations

import threading
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from spanscore.storage.connection import connect
from tests import service_setup
from tests.e2e.alert_parts import Receiver
from tests.service_setup import make_service_config, new_database_name
from tests.zookeeper import ZooKeeperServer, missing_reason, start_zookeeper


@pytest.fixture(scope="session")
def chdb_dsn(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One embedded store per test process; each test gets its own database in it."""
    return f"chdb://{tmp_path_factory.mktemp('chdb').as_posix()}"


@pytest.fixture(autouse=True)
def _drop_the_test_databases(chdb_dsn: str) -> Iterator[None]:
    """Drop every database the test named with ``new_database_name`` once its other fixtures are torn down.

    chDB stops its engine when the last connection to a path closes, and starting it again loads every database
    in the path: with each test's database kept, a service's start grew from 0.85 s to 4.7 s over 120 tests of
    one worker (two engine starts per service start), and to about 9 s late in a whole CI run, when 41 fleet
    tests' databases (38 tables each) were left. The engine is not held open between tests: a process may open
    only one chDB path, and tests open others (their own stores, a child process on this one).
    """
    yield from _dropping_what_is_named(chdb_dsn)


@pytest.fixture(scope="module", autouse=True)
def _drop_the_module_databases(chdb_dsn: str) -> Iterator[None]:
    """The same for names made by module-scoped fixtures: they are set up before any test's own fixtures."""
    yield from _dropping_what_is_named(chdb_dsn)


def _dropping_what_is_named(chdb_dsn: str) -> Iterator[None]:
    first = len(service_setup.made)
    yield
    names = service_setup.made[first:]
    del service_setup.made[first:]
    if not names:
        return
    dropped = threading.Thread(target=_drop, args=(chdb_dsn, names), daemon=True)
    dropped.start()
    dropped.join(DROP_WAIT_S)
    if dropped.is_alive():
        warnings.warn(f"test databases {names} not dropped within {DROP_WAIT_S} s: still in use?", stacklevel=1)


DROP_WAIT_S = 30.0


def _drop(dsn: str, names: list[str]) -> None:
    try:
        client = connect(dsn, "default")
        try:
            for name in names:  # SYNC: a plain DROP leaves the tables queued for removal, and the engine loads them
                client.command(f"DROP DATABASE IF EXISTS `{name}` SYNC")
        finally:
            client.close()
    except Exception as exc:
        warnings.warn(f"test databases {names} not dropped: {exc}", stacklevel=1)


@pytest.fixture
def database_name() -> str:
    """A database of this test's own, dropped after it."""
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
