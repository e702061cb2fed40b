"""A real ZooKeeper for fleet tests: ``spanscore.testing.zookeeper``, shared with bench/ (which runs without pytest)."""

from spanscore.testing.zookeeper import (
    ZooKeeperServer,
    _free_port,
    missing_reason,
    restart_wiped,
    start_zookeeper,
)

__all__ = ["ZooKeeperServer", "_free_port", "missing_reason", "restart_wiped", "start_zookeeper"]
