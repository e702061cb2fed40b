"""The fleet tests' ZooKeeper is real: a session, an ephemeral node and a versioned write round-trip."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from tests.zookeeper import ZooKeeperServer


def test_a_real_zookeeper_versions_writes(zookeeper: ZooKeeperServer) -> None:
    client = KazooClient(hosts=zookeeper.chroot())
    client.start(timeout=10)
    try:
        client.create("/doc", b"one", makepath=True)
        _, stat = client.get("/doc")
        client.set("/doc", b"two", version=stat.version)
        with pytest.raises(BadVersionError):
            client.set("/doc", b"three", version=stat.version)
        assert client.get("/doc")[0] == b"two"
    finally:
        client.stop()
        client.close()
