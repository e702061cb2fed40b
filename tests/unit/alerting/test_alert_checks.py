"""`config check` and the serve banner list every alert, and warn about the ones that can never fire."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.config import load_config
from spanscore.server.banner import serve_banner

CONFIG = """
rules:
  - name: support-quality
    scorers: [keyword_coverage, answer_health]
alerts:
  - name: typo-scorer
    scorer: keyword_coverge
    below: 0.5
    notify: [{webhook: "http://127.0.0.1:9/hook"}]
  - name: typo-rule
    scorer: answer_health
    where: {rule: support-qualty}
    below: 0.8
  - name: fine
    scorer: answer_health
    where: {rule: support-quality}
    below: 0.8
  - name: thumbs
    scorer: helpfulness
    where: {source: human}
    below: 0.5
"""


def test_config_check_lists_alerts_and_names_the_ones_that_cannot_fire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "spanscore.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    assert main(["config", "check", "-c", str(path)]) == 0
    out = capsys.readouterr().out
    for name in ("typo-scorer", "typo-rule", "fine", "thumbs"):
        assert f"alert {name}: " in out, out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, warnings
    assert "no rule scores 'keyword_coverge' (did you mean 'keyword_coverage'?)" in warnings[0]
    assert "where.rule 'support-qualty' names no rule of this config (did you mean 'support-quality'?)" in warnings[1]


def test_the_banner_lists_alerts_with_their_warnings(tmp_path: Path) -> None:
    path = tmp_path / "spanscore.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    banner = serve_banner(load_config(path), {"api": "127.0.0.1:4319"}, {"api": 4319}, default_rule=False)
    assert "  alerts:\n    alert typo-scorer: mean of keyword_coverge over 15m below 0.5" in banner
    assert banner.count("warning: alerts[") == 2
