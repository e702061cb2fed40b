"""Test databases and service configs, in a plain module so that every test imports the same one.

Imported from ``conftest.py`` it would exist twice (pytest loads the conftest as ``conftest``, a test module's
import loads it again as ``tests.conftest``), each copy with its own counter: two services were then given
the same database name.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from spanscore.config import ServiceConfig, load_config

_counter = itertools.count()
made: list[str] = []
"""Every name handed out, in order: the conftest drops those a test made once the test is over."""


def new_database_name() -> str:
    """A database name no other test of this process has; the test's teardown drops it from the test store."""
    name = f"t{os.getpid()}_{next(_counter)}"
    made.append(name)
    return name


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
