"""The "What bounds each figure" section: reasoning from the measured figures, plus profile hot spots."""

from __future__ import annotations

from typing import Any


def bounds_text(results: dict[str, Any]) -> str:
    lines = ["(analysis pending)"]
    profile = results.get("profile")
    if profile:
        lines += ["", "### Hot spots of the service during gRPC ingest (py-spy)", "", *profile["lines"]]
    return "\n".join(lines)
