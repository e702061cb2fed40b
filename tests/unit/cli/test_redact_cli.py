"""``spanscore redact`` as the blind labeller calls it (contract C1): a real process, JSON Lines both ways."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _run(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spanscore.cli", "redact", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_one_line_out_per_line_in_with_offsets_into_the_original() -> None:
    lines = [{"id": "a", "text": "ünï jane@x.org and jane@x.org"}, {"id": "b", "text": "nothing here"}]
    done = _run("".join(json.dumps(line) + "\n" for line in lines))
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert out[0] == {
        "id": "a",
        "redacted": "ünï <EMAIL_1> and <EMAIL_1>",
        "findings": [
            {"detector": "email", "start": 4, "end": 14},
            {"detector": "email", "start": 19, "end": 29},
        ],
    }
    assert out[1] == {"id": "b", "redacted": "nothing here", "findings": []}


def test_a_malformed_line_is_named_and_fails() -> None:
    done = _run('{"id": "a", "text": "x"}\n{"id": "b"}\n')
    assert done.returncode == 2
    assert "line 2" in done.stderr and '"text" must be a string' in done.stderr


def test_a_policy_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("redact:\n  sets:\n    cards: {detectors: [card]}\n", encoding="utf-8")
    text = json.dumps({"id": "a", "text": "jane@x.org 4111111111111111"}) + "\n"
    only_cards = json.loads(_run(text, "-c", str(config), "--policy", "cards").stdout)
    assert only_cards["redacted"] == "jane@x.org <CARD_1>"
    unknown = _run(text, "-c", str(config), "--policy", "strict")
    assert unknown.returncode == 2 and "no such set" in unknown.stderr
