"""Snapshot of the canonical run (with its sources) for every recorded fixture.

A change in any extractor or in run assembly shows up here as a readable diff. After an
intended change, regenerate with ``SPANSCORE_UPDATE_SNAPSHOTS=1`` and review the diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

import pytest
from recorded_traces import FIXTURES, RECORDED, load

from spanscore.run import Run
from spanscore.runs.assembly import runs_from_spans


def snapshot(run: Run) -> dict[str, Any]:
    # The raw attribute maps are what the normalizer reads, not what it derives; they stay out.
    document = {
        name: getattr(run, name)
        for name in Run.__slots__
        if name not in ("attributes", "resource_attributes", "version_attributes")
    }
    document["usage"] = asdict(run.usage)
    for name in ("input", "output", "tool_calls"):
        if document[name] is not None:
            document[name] = [asdict(item) for item in document[name]]
    return json.loads(json.dumps(document, sort_keys=True))


@pytest.mark.parametrize("name", RECORDED)
def test_canonical_run_snapshot(name: str) -> None:
    produced = [snapshot(run) for run in runs_from_spans(*load(name))]
    path = FIXTURES / f"{name}.runs.json"
    if os.environ.get("SPANSCORE_UPDATE_SNAPSHOTS") == "1":
        path.write_text(json.dumps(produced, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert produced == json.loads(path.read_text())
