"""Config errors name the key and the problem, never the value of a key that holds a secret.

Each case puts a recognisable secret into a secret-bearing key in a way the model refuses (wrong
type, wrong shape, broken YAML, an environment override) and checks that the error still says
which key is wrong while the secret appears nowhere: not in the exception, not on the CLI's stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.config import load_config
from spanscore.errors import ConfigError

SECRET = "hunter2-s3cr3t-value"

# (YAML document, the key the error must name)
SECRET_CASES = [
    # One token may be a plain string; a mapping is wrong, and its value must not be echoed.
    (f"collector:\n  auth_tokens: {{token_name: {SECRET}}}\n", "collector.auth_tokens"),
    (f"api:\n  auth_tokens: {{token_name: {SECRET}}}\n", "api.auth_tokens"),
    (f"api:\n  auth_tokens: [{{token: {SECRET}}}]\n", "api.auth_tokens[0]"),
    (f"storage:\n  dsn: ftp://admin:{SECRET}@db/\n", "storage.dsn"),
    (f"forward:\n  endpoint: http://127.0.0.1:1\n  headers: {SECRET}\n", "forward.headers"),
    (f"forward:\n  endpoint: http://127.0.0.1:1\n  headers: {{authorization: [{SECRET}]}}\n", "forward.headers"),
    (f"judge:\n  model: openai/x\n  api_key: [{SECRET}]\n", "judge.api_key"),
]


@pytest.mark.parametrize(("document", "key"), SECRET_CASES, ids=[key for _, key in SECRET_CASES])
@pytest.mark.reliability("keep-strangers-out")
def test_a_config_error_names_the_secret_key_but_never_its_value(tmp_path: Path, document: str, key: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(document, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    assert key in message, message
    assert SECRET not in message, message


def test_an_environment_override_of_a_token_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, environ={"SPANSCORE_COLLECTOR__AUTH_TOKENS": f"{{a: {SECRET}}}"})
    assert "collector.auth_tokens" in str(caught.value) and SECRET not in str(caught.value)


def test_broken_yaml_says_where_without_quoting_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"api:\n  auth_tokens: [{SECRET}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    assert "not valid YAML" in message and "line " in message, message
    assert SECRET not in message, message


def test_a_credential_in_any_url_value_is_not_echoed(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"forward:\n  endpoint: http://me:{SECRET}@127.0.0.1:1\n  protocol: carrier-pigeon\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert "forward" in str(caught.value) and SECRET not in str(caught.value)


def test_values_of_ordinary_keys_are_still_shown(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("storage:\n  spans_ttl_days: -3\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert "storage.spans_ttl_days" in str(caught.value) and "got -3" in str(caught.value)


@pytest.mark.reliability("keep-strangers-out")
def test_the_cli_prints_the_key_but_not_the_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"collector:\n  auth_tokens: {{token_name: {SECRET}}}\n", encoding="utf-8")
    assert main(["query", "-c", str(path), "SELECT 1"]) == 2
    captured = capsys.readouterr()
    assert "collector.auth_tokens" in captured.err and "valid list" in captured.err, captured.err
    assert SECRET not in captured.err + captured.out
