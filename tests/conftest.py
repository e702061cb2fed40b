from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spanscore.config import ServiceConfig, load_config
from spanscore.server.service import Service

_counter = itertools.count()


@pytest.fixture(scope="session")
def chdb_dsn(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One embedded store per test process; each test gets its own database in it."""
    return f"chdb://{tmp_path_factory.mktemp('chdb').as_posix()}"


@pytest.fixture
def database_name() -> str:
    return new_database_name()


def new_database_name() -> str:
    """Unique in the test process even when this module is imported twice (as pytest's conftest and as
    ``tests.conftest``): a counter alone restarted in the second copy and handed out names already in use."""
    return f"t{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def service_config(chdb_dsn: str, database_name: str, tmp_path: Path) -> ServiceConfig:
    return make_service_config(chdb_dsn, database_name, tmp_path)


def make_service_config(chdb_dsn: str, database_name: str, directory: Path) -> ServiceConfig:
    """A service on the test process's store, in a database of its own, on port-0 listeners."""
    config = load_config(None, environ={})
    config.storage.dsn = chdb_dsn
    config.storage.spool_dir = (directory / "spool").as_posix()
    config.storage.database = database_name
    config.storage.flush_interval_s = 0.01
    # Most tests read back what an OK acknowledged, at once: they run with "OK = stored". The default,
    # spooled, is exercised by the tests that parametrize the mode and by test_default_acknowledgement.py.
    config.storage.acknowledge = "stored"
    config.collector.grpc.port = 0
    config.collector.http.port = 0
    config.api.port = 0
    return config


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
