"""`scores_written{rule,status}` keeps series for the running rules only.

Issue #37 item 14: the labels were never pruned, so every rule a token holder ever PUT stayed a series in
/metrics (and in memory) for the life of the process.
"""

from __future__ import annotations

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service


def _rules(*names: str) -> list[RuleConfig]:
    return [RuleConfig.model_validate({"name": name, "scorers": ["completeness"]}) for name in names]


def test_a_replaced_rules_series_are_dropped(service_config: ServiceConfig) -> None:
    config = service_config.model_copy(deep=True)
    config.rules = _rules("kept", "gone")
    live = Service(config).live
    assert live is not None
    live.scores_written["kept", "ok"] += 2
    live.scores_written["gone", "ok"] += 3
    live.replace_rules(_rules("kept", "new"))
    assert dict(live.scores_written) == {("kept", "ok"): 2}
    assert not any('rule="gone"' in key for key in live.metrics())
