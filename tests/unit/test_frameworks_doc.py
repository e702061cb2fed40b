"""docs/frameworks.md is what scripts/frameworks_doc.py writes from the recorded fixtures' metadata."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from tests.scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[1].parent


def _generator() -> ModuleType:
    return load_script("frameworks_doc")


def test_committed_doc_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "frameworks.md").read_text(encoding="utf-8")
    assert committed == _generator().render(), "docs/frameworks.md is out of date: run python scripts/frameworks_doc.py"


def test_every_fixture_has_a_row_with_its_recorded_versions() -> None:
    generator = _generator()
    text = generator.render()
    for path in generator.FIXTURES.glob("*.meta.json"):
        meta = json.loads(path.read_text())
        name = path.name.removesuffix(".meta.json")
        row = next(line for line in text.splitlines() if f"`{name}`" in line)
        assert all(f"{package} {version}" in row for package, version in meta["versions"].items())
        assert meta["setup"] in row
