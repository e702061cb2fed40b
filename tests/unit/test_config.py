from __future__ import annotations

from pathlib import Path

import pytest

from spanscore.config import load_config
from spanscore.errors import ConfigError


def test_defaults_are_loopback_and_embedded_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    path = config_dir / "c.yaml"
    path.write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = load_config(path, environ={})
    assert config.collector.grpc.host == "127.0.0.1" and config.collector.grpc.port == 4317
    assert config.collector.http.port == 4318
    assert config.collector.grpc.max_message_bytes >= 64 << 20
    assert config.storage.dsn == f"chdb://{(tmp_path / 'spanscore-data').as_posix()}"
    assert config.storage.database == "spanscore"


def test_without_a_file_the_data_dir_is_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config(None, environ={}).storage.dsn == f"chdb://{(tmp_path / 'spanscore-data').as_posix()}"


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("collector:\n  grpc:\n    port: 5000\n", encoding="utf-8")
    config = load_config(
        path,
        environ={
            "SPANSCORE_COLLECTOR__GRPC__PORT": "6000",
            "SPANSCORE_STORAGE__DSN": "clickhouse://user:pw@db:8123/",
            "SPANSCORE_COLLECTOR__AUTH_TOKENS": "[a, b]",
            "OTHER": "ignored",
        },
    )
    assert config.collector.grpc.port == 6000
    assert config.storage.dsn == "clickhouse://user:pw@db:8123/"
    assert config.collector.auth_tokens == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("collector: [1, 2]", "collector"),
        ("storage: {database: 'bad-name;'}", "storage.database"),
        ("api: {port: 70000}", "api.port"),
        ("nonsense: 1", "nonsense: unknown key"),
        ("storage: {dsn: 'chdb://relative'}", "storage.dsn"),
        (": : :", "not valid YAML"),
        ("- a list", "top level must be a mapping"),
    ],
)
def test_invalid_files_name_the_key_and_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml", environ={})


def test_rule_problems_are_named_by_path(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(
        "rules:\n"
        "  - name: a\n    sample: 1.5\n    where: {latency: {gtt: 3}}\n    scorers: [completeness]\n"
        "  - name: a\n    scorers: [completeness]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    assert "rules[0].where.latency: unknown operator 'gtt'" in message
    assert "rules[0].sample: must be between 0 and 1, got 1.5" in message
    path.write_text("rules:\n  - {name: a, scorers: [completeness]}\n  - {name: a, scorers: [x]}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'a' is used by rules\[0\] and rules\[1\]"):
        load_config(path, environ={})


def test_spool_defaults_into_the_data_dir_not_next_to_the_config(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "c.yaml"
    path.parent.mkdir()
    path.write_text("", encoding="utf-8")
    config = load_config(path, environ={"SPANSCORE_STORAGE__DATA_DIR": str(tmp_path / "var")})
    assert config.storage.spool_dir == (tmp_path / "var" / "spool").as_posix()
    assert config.storage.dsn == f"chdb://{(tmp_path / 'var').as_posix()}"
    assert config.storage.spool_max_bytes == 1 << 30


def test_one_token_may_be_a_plain_string_and_placeholders_are_refused() -> None:
    from spanscore.config import load_config
    from spanscore.errors import ConfigError

    config = load_config(
        None, environ={"SPANSCORE_COLLECTOR__AUTH_TOKENS": "s3cr3t-ingest", "SPANSCORE_API__AUTH_TOKENS": "[a1, a2]"}
    )
    assert config.collector.auth_tokens == ["s3cr3t-ingest"] and config.api.auth_tokens == ["a1", "a2"]
    for placeholder in ("change-me-too", "REPLACE", "[change-me-as-well]"):
        with pytest.raises(ConfigError) as refused:
            load_config(None, environ={"SPANSCORE_API__AUTH_TOKENS": placeholder})
        assert "placeholder" in str(refused.value) and "change-me" not in str(refused.value).split(":", 1)[1]
