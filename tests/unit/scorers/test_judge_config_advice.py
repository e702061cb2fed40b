"""`spanscore config check` and the serve banner say what a judge's api_base and price will do (#32).

litellm gives ``api_base`` a different meaning per provider; a base of the wrong shape becomes a 404
that is never retried (Anthropic's ``.../v1`` -> ``/v1/v1/messages``). A model litellm cannot price
used to be recorded as costing 0. Both are said before the first judgement.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.config import load_config
from spanscore.server.banner import serve_banner

RULES = "rules: [{name: r, scorers: [faithfulness]}]\n"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", "a-key")  # the configs below name K as api_key_env; config check reads it


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(f"storage: {{data_dir: {(tmp_path / 'data').as_posix()}}}\njudge: {judge}\n{RULES}")
    assert main(["config", "check", "-c", str(path)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ("{model: anthropic/claude-haiku-4-5, api_base: 'http://127.0.0.1:9/v1'}", "give the host root"),
        ("{model: gemini/gemini-2.5-flash, api_base: 'http://127.0.0.1:9'}", "must end in /v1beta"),
        ("{model: ollama/llama3, api_base: 'http://127.0.0.1:11434/api/generate'}", "give the host root"),
        ("{model: openai/x, api_base: 'http://127.0.0.1:9/v1/chat/completions'}", "ending in /v1"),
        ("{model: azure/d, api_base: 'https://r.openai.azure.com/openai/deployments/d'}", "resource root"),
    ],
)
def test_an_api_base_the_provider_would_double_up_or_reject_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str, expected: str
) -> None:
    out = _check(tmp_path, capsys, judge)
    assert "warning: judge" in out and "looks wrong" in out and expected in out


@pytest.mark.parametrize(
    "judge",
    [
        "{model: anthropic/claude-haiku-4-5, api_base: 'http://127.0.0.1:9', api_key_env: K}",
        "{model: gemini/gemini-2.5-flash, api_base: 'http://127.0.0.1:9/v1beta', api_key_env: K}",
        "{model: ollama/llama3, api_base: 'http://127.0.0.1:11434'}",
        "{model: openai/gpt-4o-mini, api_key_env: K}",
    ],
)
def test_the_right_shapes_pass_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str
) -> None:
    assert "warning" not in _check(tmp_path, capsys, judge)


def test_an_unpriced_model_is_said_in_config_check_and_the_banner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _check(tmp_path, capsys, "{model: anthropic/claude-3-5-haiku-latest, api_key_env: K}")
    assert "no price for anthropic/claude-3-5-haiku-latest" in out and "cost unknown" in out
    config = load_config(None, environ={})
    config.judge = {"model": "anthropic/claude-3-5-haiku-latest", "api_key_env": "K"}
    banner = serve_banner(config, {"grpc": "127.0.0.1:1"}, {}, False)
    assert "judge: anthropic/claude-3-5-haiku-latest" in banner and "cost unknown" in banner
    config.judge = {"model": "anthropic/claude-haiku-4-5", "api_key_env": "K"}
    assert "cost unknown" not in serve_banner(config, {"grpc": "127.0.0.1:1"}, {}, False)


def test_a_hosted_provider_without_a_key_setting_names_the_variable_litellm_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _check(tmp_path, capsys, "{model: gemini/gemini-2.5-flash, api_base: 'http://127.0.0.1:9/v1beta'}")
    assert "GEMINI_API_KEY" in out
