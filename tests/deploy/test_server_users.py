"""The shipped compose and Kubernetes configs migrate and serve on a ClickHouse server as deploy/clickhouse's users.

Issue #36, item 10: with ``query_dsn`` empty, opening the store found that the owner could write and stopped;
``spanscore migrate`` created the tables and then failed the same way, so the k8s Job never completed; the
example Secret named a user that deploy/clickhouse never creates. No ClickHouse server runs here: a stand-in
serves the server protocol from the embedded engine (``spanscore.testing.clickhouse_standin``), with the users
and settings profiles that deploy/clickhouse's statements create, and real ``spanscore migrate`` and
``spanscore serve`` processes reach it through the ``clickhouse://`` DSNs of the shipped files.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spanscore.testing.clickhouse_standin import spawn, stop, users_from_sql
from tests.deploy.test_deploy import DEPLOY, K8S, compose_environment, find, load_yaml
from tests.ports import free_port
from tests.zookeeper import ZooKeeperServer

ROOT = Path(__file__).resolve().parents[2]
OWNER_PASSWORD = secrets.token_hex(12)
QUERY_PASSWORD = secrets.token_hex(12)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """A stand-in ClickHouse server with deploy/clickhouse's users, under this test's passwords; its port."""
    files = []
    for name, password in (("owner-user.sql", OWNER_PASSWORD), ("query-user.sql", QUERY_PASSWORD)):
        copy = tmp_path / name
        copy.write_text((DEPLOY / "clickhouse" / name).read_text().replace("'CHANGE-ME'", f"'{password}'"))
        files.append(str(copy))
    process, port = spawn(str(tmp_path / "clickhouse"), *files)
    yield port
    stop(process)


def _run(arguments: list[str], environ: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "spanscore.cli.commands", *arguments]
    return subprocess.run(command, env=environ, cwd=cwd, capture_output=True, text=True, timeout=240, check=False)


def _base(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}


def _on_loopback(environ: dict[str, str], tmp_path: Path) -> tuple[dict[str, str], int]:
    """The same config, bound to free loopback ports and a local data directory; the API port."""
    api = free_port()
    ports = {"COLLECTOR__GRPC__PORT": free_port(), "COLLECTOR__HTTP__PORT": free_port(), "API__PORT": api}
    local = {f"SPANSCORE_{key}": str(value) for key, value in ports.items()}
    hosts = ("COLLECTOR__GRPC__HOST", "COLLECTOR__HTTP__HOST", "API__HOST")
    local |= {f"SPANSCORE_{key}": "127.0.0.1" for key in hosts}
    local["SPANSCORE_STORAGE__DATA_DIR"] = str(tmp_path / "data")
    return {**environ, **local}, api


def _serves(environ: dict[str, str], config: Path, api: int, cwd: Path) -> str:
    """Start ``spanscore serve`` and wait until its API answers /healthz; its log if it exited instead."""
    command = [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(config)]
    log = cwd / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, env=environ, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{api}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return ""
            except OSError:
                time.sleep(0.3)
        return log.read_text()[-3000:] or f"serve exited {process.poll()}"
    finally:
        stop(process)


def _k8s_environment(container: dict[str, Any], fill: dict[str, str]) -> dict[str, str]:
    """The container's variables with the example Secret's values, its REPLACE placeholders filled."""
    secret = load_yaml(K8S / "examples" / "spanscore-secret.yaml")["stringData"]
    environ = {}
    for variable in container["env"]:
        if "value" in variable:
            environ[variable["name"]] = variable["value"]
            continue
        source = variable["valueFrom"]
        if "fieldRef" in source:
            environ[variable["name"]] = "spanscore-6d8f9c7b5-x2k4q"
            continue
        key = source["secretKeyRef"]["key"]
        environ[variable["name"]] = fill.get(key, secret[key].replace("REPLACE", secrets.token_hex(8)))
    return environ


def _filled_secret(port: int, keeper: str) -> dict[str, str]:
    """The example Secret's DSNs, with the stand-in's address and this test's passwords in the placeholders."""
    secret = load_yaml(K8S / "examples" / "spanscore-secret.yaml")["stringData"]
    address = "@clickhouse.spanscore:8123/"
    assert address in secret["dsn"] and address in secret["query-dsn"]
    here = f"@127.0.0.1:{port}/"
    return {
        "dsn": secret["dsn"].replace("REPLACE", OWNER_PASSWORD).replace(address, here),
        "query-dsn": secret["query-dsn"].replace("REPLACE", QUERY_PASSWORD).replace(address, here),
        "keeper": keeper,
        "openai-api-key": "",
    }


def test_the_example_secret_names_the_users_deploy_clickhouse_creates() -> None:
    secret = load_yaml(K8S / "examples" / "spanscore-secret.yaml")["stringData"]
    sql = [(DEPLOY / "clickhouse" / name).read_text() for name in ("owner-user.sql", "query-user.sql")]
    users = users_from_sql(*sql)
    assert secret["dsn"].startswith("clickhouse://spanscore_owner:")
    assert secret["query-dsn"].startswith("clickhouse://spanscore_query:")
    assert users["spanscore_query"].settings["readonly"] == "1"
    assert users["spanscore_owner"].settings.get("readonly", "0") == "0"


def test_the_k8s_job_migrates_and_the_replicas_serve_as_the_deploy_users(
    server: int, zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    config = tmp_path / "spanscore.yaml"
    config.write_text(find("ConfigMap", "spanscore-config")["data"]["spanscore.yaml"])
    fill = _filled_secret(server, zookeeper.chroot())
    job = find("Job", "spanscore-migrate")["spec"]["template"]["spec"]["containers"][0]
    migrated = _run(["migrate", "-c", str(config)], {**_base(tmp_path), **_k8s_environment(job, fill)}, tmp_path)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    assert "is up to date" in migrated.stdout
    container = find("StatefulSet", "spanscore")["spec"]["template"]["spec"]["containers"][0]
    environ, api = _on_loopback({**_base(tmp_path), **_k8s_environment(container, fill)}, tmp_path)
    assert _serves(environ, config, api, tmp_path) == ""


def test_compose_migrates_and_serves_as_the_users_its_clickhouse_creates(server: int, tmp_path: Path) -> None:
    compose = load_yaml(DEPLOY / "compose.yaml")["services"]
    values = {
        "CLICKHOUSE_PASSWORD": "admin-pw", "SPANSCORE_OWNER_PASSWORD": OWNER_PASSWORD,
        "SPANSCORE_QUERY_PASSWORD": QUERY_PASSWORD, "SPANSCORE_INGEST_TOKEN": secrets.token_hex(16),
        "SPANSCORE_API_TOKEN": secrets.token_hex(16),
    }  # fmt: skip

    def environment(service: str) -> dict[str, str]:
        filled = compose_environment(compose[service], values)
        local = {k: v.replace("@clickhouse:8123/", f"@127.0.0.1:{server}/") for k, v in filled.items()}
        return {**_base(tmp_path), **local}

    config = DEPLOY / "spanscore.yaml"
    migrated = _run(["migrate", "-c", str(config)], environment("migrate"), tmp_path)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    environ, api = _on_loopback(environment("spanscore"), tmp_path)
    assert _serves(environ, config, api, tmp_path) == ""


def test_compose_clickhouse_creates_those_users_with_the_env_passwords(tmp_path: Path) -> None:
    """compose-users.sh, run as the image runs it, with a ``clickhouse`` on PATH that keeps what it is sent."""
    fake = tmp_path / "bin" / "clickhouse"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ncat >> {tmp_path / 'sent.sql'}\n")
    fake.chmod(0o755)
    environ = {
        "PATH": f"{fake.parent}:/usr/bin:/bin", "SPANSCORE_USERS_DIR": str(DEPLOY / "clickhouse"),
        "CLICKHOUSE_USER": "spanscore", "CLICKHOUSE_PASSWORD": "admin-pw",
        "SPANSCORE_OWNER_PASSWORD": OWNER_PASSWORD, "SPANSCORE_QUERY_PASSWORD": QUERY_PASSWORD,
    }  # fmt: skip
    script = str(DEPLOY / "clickhouse" / "compose-users.sh")
    done = subprocess.run(["bash", script], env=environ, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    users = users_from_sql((tmp_path / "sent.sql").read_text())
    assert {name: user.password for name, user in users.items()} == {
        "spanscore_owner": OWNER_PASSWORD,
        "spanscore_query": QUERY_PASSWORD,
    }
    services = load_yaml(DEPLOY / "compose.yaml")["services"]
    mounted = [v for v in services["clickhouse"]["volumes"] if "docker-entrypoint-initdb.d" in v]
    assert mounted == ["./clickhouse/compose-users.sh:/docker-entrypoint-initdb.d/spanscore-users.sh:ro"]
    environ["SPANSCORE_QUERY_PASSWORD"] = "it's"
    refused = subprocess.run(["bash", script], env=environ, capture_output=True, text=True, timeout=30, check=False)
    assert refused.returncode == 1 and "letters, digits, _ and -" in refused.stderr
