"""Hostile requests against a real `spanscore serve`: what a token holder (or, on a token-less loopback API,
any local process) can make the rules and operations endpoints do. docs/security.md is the model these
tests hold the service to: rules sent over the API choose among what the operator configured, never code,
an address, a file or a credential, and no body can cost more than its size.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_client import api_call, api_json
from tests.e2e.test_process import _free_port, _start

PATH_SCORER = "tests.e2e.target_scorers:documents_found"
CONFIG_RULES = (
    "rules:\n"
    "  - name: quality\n"
    "    scorers: [completeness]\n"
    "  - name: documents\n"
    "    target: retrieval\n"
    f"    scorers: ['{PATH_SCORER}']\n"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    root = tmp_path_factory.mktemp("hostile")
    api_port = _free_port()
    config = root / "spanscore.yaml"
    config.write_text(
        f"collector:\n  grpc: {{port: {_free_port()}}}\n  http: {{port: {_free_port()}}}\n"
        f"api: {{port: {api_port}}}\nlog_level: INFO\n" + CONFIG_RULES,
        encoding="utf-8",
    )
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path.cwd()), env_path) if p)
    process = _start(config)
    try:
        yield api_port, root
    finally:
        os.environ["PYTHONPATH"] = env_path
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _put_rules(port: int, document: Any, kind: str = "application/json") -> tuple[int, Any]:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return api_call(port, "/api/v1/rules", raw=body, method="PUT", content_type=kind)


def _rules_version(port: int) -> str:
    return str(api_json(port, "/api/v1/rules")["version"])


def _refused(port: int, document: Any, *needles: str, kind: str = "application/json") -> dict[str, Any]:
    """PUT must answer 400 naming what is wrong, and leave the running rules as they were."""
    before = _rules_version(port)
    status, body = _put_rules(port, document, kind)
    assert status == 400, (status, body)
    text = json.dumps(body)
    for needle in needles:
        assert needle in text, (needle, body)
    assert _rules_version(port) == before
    return dict(body)


@pytest.mark.reliability("token-opens-api-not-host")
def test_a_scorer_named_by_import_path_runs_no_code(served: tuple[int, Path]) -> None:
    port, root = served
    marker = root / "pwned"
    for name in ("os:system", "subprocess:getoutput", "builtins:exec"):
        rule = {"name": "evil", "scorers": [{"name": name, "command": f"touch {marker}"}]}
        _refused(port, {"rules": [rule]}, name, "config file")
    assert not marker.exists(), "a rule sent over the API ran a command"


def test_an_import_path_the_operator_configured_may_be_reused(served: tuple[int, Path]) -> None:
    port, _ = served
    rule = {"name": "again", "target": "retrieval", "scorers": [PATH_SCORER]}
    status, body = _put_rules(port, {"rules": [rule]})
    assert status == 200, body
    assert body["changed"] is True


@pytest.mark.parametrize(
    "options",
    [
        {"judge": {"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9/v1", "api_key_env": "HOME"}},
        {"judge": {"model": "openai/gpt-4o-mini", "api_key_file": "/etc/passwd"}},
        {"model": "anthropic/claude-3-5-haiku-latest"},
        {"step_judges": {"analyze": {"api_base": "http://127.0.0.1:9"}}},
        {"instructions": "x", "score": "os:system"},
        {"instructions": "x", "analyze": {"prompt": "p", "schema": {"type": "object"}, "judge": {"api_base": "x"}}},
    ],
)
@pytest.mark.reliability("token-opens-api-not-host")
def test_a_rule_cannot_name_an_address_a_key_file_or_code(served: tuple[int, Path], options: dict[str, Any]) -> None:
    port, _ = served
    rule = {"name": "redirected", "scorers": [{"name": "llm_judge", **options}]}
    body = _refused(port, {"rules": [rule]}, "only the config file")
    assert any("scorers[0]" in problem for problem in body["problems"]), body


@pytest.mark.reliability("bad-input-clear-error")
def test_a_yaml_alias_bomb_is_refused_before_it_expands(served: tuple[int, Path]) -> None:
    port, _ = served
    levels = ['a0: &a0 {"tool.name": x}']
    for level in range(1, 6):
        levels.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    bomb = "\n".join(levels) + "\nrules:\n  - name: bomb\n    where: {any: *a5}\n    scorers: [completeness]\n"
    _refused(port, bomb.encode(), "alias", kind="application/yaml")


@pytest.mark.reliability("bad-input-clear-error")
@pytest.mark.parametrize("path", ["/api/v1/rules", "/api/v1/scores", "/api/v1/query", "/api/v1/backfill"])
def test_deep_json_is_a_clear_400_on_every_endpoint(served: tuple[int, Path], path: str) -> None:
    port, _ = served
    deep = b'{"rules": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    method = "PUT" if path.endswith("rules") else "POST"
    status, body = api_call(port, path, raw=deep, method=method)
    assert status == 400, (status, body)
    assert "deep" in json.dumps(body), body


def test_deep_yaml_is_a_clear_400(served: tuple[int, Path]) -> None:
    port, _ = served
    deep = b"rules: " + b"[" * 100_000 + b"]" * 100_000
    _refused(port, deep, "deep", kind="application/yaml")


@pytest.mark.reliability("bad-input-clear-error")
@pytest.mark.parametrize("name", ["forged\n2026-01-01 ERROR spanscore: judge key leaked", "bell\x07", "esc\x1b[2J"])
def test_a_rule_name_cannot_carry_control_characters(served: tuple[int, Path], name: str) -> None:
    port, _ = served
    _refused(port, {"rules": [{"name": name, "scorers": ["completeness"]}]}, "control character")


def test_a_regex_the_linear_time_engine_cannot_run_is_refused(served: tuple[int, Path]) -> None:
    port, _ = served
    rule = {"name": "r", "where": {"agent.name": {"regex": "(a)\\1"}}, "scorers": ["completeness"]}
    _refused(port, {"rules": [rule]}, "regular expression")
