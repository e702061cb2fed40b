"""Sample the running service with py-spy during one gRPC ingest run (optional; py-spy is not a dependency)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.suite import Plan


def profile_ingest(plan: Plan, log: Callable[[str], None]) -> dict[str, Any] | None:
    log("  profile: not implemented yet")
    return None
