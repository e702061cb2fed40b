"""Figures measured by the reliability tests, recorded for docs/reliability.md.

``record_figures`` is a no-op unless ``RELIABILITY_FIGURES_FILE`` names a
JSON file; then each test merges its figures under its own key. The committed
``docs/reliability-figures.json`` is written this way (see
``scripts/reliability_doc.py``), and the doc generator renders it.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

# Not SPANSCORE_*: the service reads every such variable as a config override and would refuse to start.
ENVIRONMENT_VARIABLE = "RELIABILITY_FIGURES_FILE"


def record_figures(test: str, figures: dict[str, Any]) -> None:
    target = os.environ.get(ENVIRONMENT_VARIABLE)
    if not target:
        return
    path = Path(target)
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    machine = f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}"
    document[test] = {
        "measured": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": machine,
        **figures,
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
