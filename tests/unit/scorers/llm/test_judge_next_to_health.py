"""A sampled judge next to ``answer_health``: the banner suggests it, the docs show it, the judge reads its findings.

Issue #38: what only meaning can tell (a wrong fact, an answer contradicting its tool result, an
answer to another question) needs a judge; a cheap one runs on a sample, and it is told what the
local checks found (``{health}``) so it starts from them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from spanscore.config import ServiceConfig
from spanscore.run import Run
from spanscore.scorers import Status, build
from spanscore.server.banner import serve_banner
from spanscore.server.default_rules import DEFAULT_RULE, apply_default_rules
from spanscore.server.judge_hint import MEANING_RULE, MEANING_RULES_YAML
from tests.fakes.fake_openai import Reply

DOCS = Path(__file__).parents[4] / "docs" / "scorers.md"


def _banner(config: dict[str, object]) -> str:
    service = ServiceConfig.model_validate(config)
    default = apply_default_rules(service)
    return serve_banner(service, {"grpc": "127.0.0.1:4317"}, {}, default)


def test_the_banner_suggests_the_judged_rule_only_when_a_judge_is_configured() -> None:
    with_judge = _banner({"judge": {"model": "openai/gpt-4o-mini"}})
    assert "name: meaning" in with_judge and "{health}" in with_judge
    assert "name: meaning" not in _banner({})
    judged = {"judge": {"model": "openai/gpt-4o-mini"}, "rules": yaml.safe_load(MEANING_RULES_YAML)["rules"]}
    assert "name: meaning" not in _banner(judged)  # already there


def test_the_suggested_rules_are_a_valid_config_and_the_docs_show_them_verbatim() -> None:
    rules = yaml.safe_load(MEANING_RULES_YAML)["rules"]
    assert rules[0] == DEFAULT_RULE
    config = ServiceConfig.model_validate({"judge": {"model": "openai/gpt-4o-mini"}, "rules": rules})
    assert [rule.sample for rule in config.rules] == [1.0, 0.05]
    for spec in config.rules[1].scorers:
        assert build(spec.name, **spec.options).info.kind == "llm"
    assert MEANING_RULES_YAML in DOCS.read_text("utf-8")


async def test_the_judge_reads_what_answer_health_found(judge_server, judge_options) -> None:
    options = dict(MEANING_RULE["scorers"][0]["options"])
    judge_server.script("meaning", Reply.json({"ok": 0, "why": "the tool failed"}))
    scorer = build("llm_judge", **options, **judge_options("meaning"))
    run = Run(
        "What's my balance?",
        "Your balance is $12,847.33.",
        tool_calls=[{"name": "get_balance", "error": "ConnectionRefusedError: Connection refused"}],
    )
    result = await scorer.arun(run)
    assert result.status is Status.OK and result.score == 0.0, result.error
    prompt = judge_server.requests[0]["messages"][1]["content"]
    assert "<<<BEGIN answer_health>>>\ntool call(s) failed: get_balance" in prompt
