"""docs/reliability.md is what scripts/reliability_doc.py writes from the tests, the config and the figures."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    return load_script("reliability_doc")


def test_committed_doc_is_up_to_date() -> None:
    generator = _generator()
    committed = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert committed == generator.render(), "docs/reliability.md is out of date: run python scripts/reliability_doc.py"


def test_every_guarantee_is_proved_by_a_test_and_every_test_names_a_guarantee() -> None:
    generator = _generator()
    tests = generator.collect_tests()  # raises on an unknown guarantee or a listed test that is gone
    proved = {test.guarantee for test in tests}
    assert proved == {guarantee.key for guarantee in generator.GUARANTEES}
    assert all(test.summary for test in tests)


def test_defaults_in_the_doc_come_from_the_config_models() -> None:
    from spanscore.config import ServiceConfig

    text = _generator().render()
    expected = f"{ServiceConfig().storage.max_pending_spans:,}"
    assert f"| `storage.max_pending_spans` | {expected} |" in text
