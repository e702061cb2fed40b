"""Fleet mode: N replicas that are one service, coordinated through ZooKeeper (as ClickHouse Keeper speaks it)."""
