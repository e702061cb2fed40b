"""A rule is previewed before it is applied (issue #40 items 1 and 2).

`spanscore rules preview NAME --file FILE` and the API's preview with a rules body give matched, sampled and
estimated judge calls over a past window for a rule that is not running; messages say "running rules" or the
file truthfully; a rules file's judge: section is never applied, and the error for a judge rule says where a
judge is set.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.server.service import Service
from tests.e2e.api_client import api_call
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces

FILE_RULES = (
    "judge: {model: openai/gpt-4o-mini, api_key_env: OPENAI_API_KEY}\n"
    "rules:\n"
    "  - name: weather-quality\n"
    "    sample: 0.5\n"
    "    scorers: [completeness]\n"
    "  - name: judged\n"
    "    scorers: [answer_relevancy]\n"
)


async def _seeded(service: Service) -> int:
    assert service.grpc is not None and service.api is not None
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(20)) == "SUCCESS"
    for _ in range(200):
        rows = await asyncio.to_thread(service.store.internal_query, "SELECT uniqExact(TraceId) FROM otel_traces")
        if rows[0][0] >= 20:
            break
        await asyncio.sleep(0.05)
    return service.api.port


async def test_a_rule_from_a_file_is_previewed_and_the_running_ones_are_named(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = await _seeded(service)
    status, unknown = await asyncio.to_thread(
        api_call, port, "/api/v1/rules/preview", {"rule": "weather-quality", "since": "1h"}
    )
    assert status == 400 and "running rules:" in unknown["error"] and "--file" in unknown["error"], unknown

    rules = [{"name": "weather-quality", "sample": 0.5, "scorers": ["completeness"]}]
    body = {"rule": "weather-quality", "since": "1h", "rules": rules}
    status, answer = await asyncio.to_thread(api_call, port, "/api/v1/rules/preview", body)
    assert status == 200, answer
    assert answer["rule"] == "weather-quality" and answer["candidates"] == 20 and 0 < answer["sampled"] < 20
    assert answer["estimated_judge_calls"] == 0
    assert (await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM scores"))[0][0] == 0

    hostile = {"rule": "x", "since": "1h", "rules": [{"name": "x", "scorers": [{"name": "os:system"}]}]}
    status, refused = await asyncio.to_thread(api_call, port, "/api/v1/rules/preview", hostile)
    assert status == 400 and "os:system" in str(refused), refused  # the PUT's trust check holds here too

    file = tmp_path / "rules.yaml"
    file.write_text(FILE_RULES, encoding="utf-8")
    monkeypatch.setenv("SPANSCORE_API__PORT", str(port))
    assert (
        await asyncio.to_thread(main, ["rules", "preview", "weather-quality", "--file", str(file), "--since", "1h"])
        == 0
    )
    out = capsys.readouterr()
    assert "candidates 20, matched 20" in out.out and "judge: section is not sent" in out.err

    assert await asyncio.to_thread(main, ["rules", "apply", str(file)]) == 1
    err = capsys.readouterr().err
    assert "config file the service was started with" in err and "restart" in err, err
