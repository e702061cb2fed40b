"""Each service builds its scorers with its own judge: two services in one process share no judge state."""

from __future__ import annotations

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service


def _service(config: ServiceConfig, model: str) -> Service:
    config = config.model_copy(deep=True)
    config.judge = {"model": model, "api_base": "http://127.0.0.1:9/v1", "timeout_s": 3}  # loopback: no key
    config.rules = [RuleConfig.model_validate({"name": "quality", "scorers": ["faithfulness"]})]
    return Service(config)


def test_two_services_score_with_their_own_judge_and_client(service_config: ServiceConfig) -> None:
    other = service_config.model_copy(deep=True)
    other.storage.spool_dir = f"{service_config.storage.spool_dir}-second"  # a spool has one writer
    first, second = _service(service_config, "openai/judge-a"), _service(other, "openai/judge-b")
    assert first.live is not None and second.live is not None
    assert first.live.scorers["quality"][0].options["model"] == "openai/judge-a"
    assert second.live.scorers["quality"][0].options["model"] == "openai/judge-b"
    assert first.judge is not None and second.judge is not None
    assert first.judge.client is not second.judge.client
    # Rules replaced at run time are built with the same judge, not a default one.
    first.live.replace_rules([RuleConfig.model_validate({"name": "again", "scorers": ["answer_relevancy"]})])
    assert first.live.scorers["again"][0].options["model"] == "openai/judge-a"
