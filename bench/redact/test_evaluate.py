"""The scoring of the redaction set, checked on a tiny case worked out by hand (no spanscore needed).

.venv/bin/python -m pytest -n 0 -q -p no:cacheprovider bench/redact/test_evaluate.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.redact import evaluate, generate, placeholders
from bench.redact.match import PROVIDER, score

HERE = Path(__file__).resolve().parent
KEY = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"


def _span(text: str, value: str, kind: str) -> dict[str, Any]:
    start = text.index(value)
    return {"start": start, "end": start + len(value), "kind": kind, "value": value}


def _records() -> list[dict[str, Any]]:
    a = "mail anna@x.de card 4111111111111111 v1.2.3"
    b = "call +44 20 7946 0321 or see user@example.com"
    c = f"token {KEY}"
    version = _span(a, "v1.2.3", "")
    return [
        {
            "id": "a",
            "text": a,
            "spans": [_span(a, "anna@x.de", "email"), _span(a, "4111111111111111", "card")],
            "optional": [],
            "lookalikes": [{**version, "category": "version"}],
        },
        {
            "id": "b",
            "text": b,
            "spans": [_span(b, "+44 20 7946 0321", "phone")],
            "optional": [_span(b, "user@example.com", "email")],
            "lookalikes": [],
        },
        {"id": "c", "text": c, "spans": [_span(c, KEY, "secret")], "optional": [], "lookalikes": []},
    ]


def _outputs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    a, b, _ = records
    email, card = a["spans"]
    phone, placeholder, version = b["spans"][0], b["optional"][0], a["lookalikes"][0]
    return [
        {
            "id": "a",
            "redacted": "mail <EMAIL_1> card <CARD_1>111111111 <IP_1>",
            "findings": [
                {"detector": "email", "start": email["start"], "end": email["end"]},
                {"detector": "card", "start": card["start"], "end": card["start"] + 7},  # 7 of 16: under half
                {"detector": "ip", "start": version["start"], "end": version["end"]},
            ],
        },
        {
            "id": "b",
            "redacted": "call <CARD_1> or see <EMAIL_1>",
            "findings": [
                {"detector": "card", "start": phone["start"], "end": phone["end"]},  # right span, wrong kind
                {"detector": "email", "start": placeholder["start"], "end": placeholder["end"]},  # optional: ignored
            ],
        },
        {"id": "c", "redacted": records[2]["text"], "findings": []},
    ]


def test_hand_worked_figures() -> None:
    records = _records()
    result = score(records, {o["id"]: o["findings"] for o in _outputs(records)})
    t = result.tallies
    assert (t["email"].labelled, t["email"].found, t["email"].findings, t["email"].correct) == (1, 1, 1, 1)
    assert (t["card"].labelled, t["card"].found, t["card"].findings, t["card"].correct) == (1, 0, 2, 0)
    assert (t["phone"].labelled, t["phone"].found, t["phone"].findings) == (1, 0, 0)
    assert (t["ip"].findings, t["ip"].correct) == (1, 0)
    assert (t["secret"].labelled, t["secret"].found, t[PROVIDER].labelled, t[PROVIDER].found) == (1, 0, 1, 0)
    assert (t["overall"].labelled, t["overall"].found, t["overall"].findings, t["overall"].correct) == (4, 2, 4, 2)
    assert t["overall"].recall() == 0.5 and t["overall"].precision() == 0.5 and t["phone"].precision() is None
    assert sorted((m["id"], m["kind"], tuple(m["masked_as"])) for m in result.misses) == [
        ("a", "card", ()),
        ("b", "phone", ("card",)),
        ("c", "secret", ()),
    ]
    assert sorted((f["id"], f["detector"], f["lookalike"]) for f in result.false_positives) == [
        ("a", "card", None),
        ("a", "ip", "version"),
    ]
    assert [(w["id"], w["detector"], w["labelled_as"]) for w in result.wrong_kind] == [("b", "card", ["phone"])]


def test_findings_mode_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = _records()
    set_file, out_file = tmp_path / "set.jsonl", tmp_path / "out.jsonl"
    set_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    out_file.write_text("".join(json.dumps(o) + "\n" for o in _outputs(records)))
    assert evaluate.main([str(set_file), "--findings", str(out_file), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["figures"]["overall"]["precision"] == 0.5
    assert [(x["id"], x["kind"]) for x in figures["leaks"]] == [("c", "secret")]
    assert figures["placeholder_problems"] == []


@pytest.mark.parametrize("breakage", ["swap", "range", "short"])
def test_contract_breaks_are_refused(tmp_path: Path, breakage: str) -> None:
    records = _records()
    outputs = _outputs(records)
    if breakage == "swap":
        outputs[0], outputs[1] = outputs[1], outputs[0]
    elif breakage == "range":
        outputs[2]["findings"] = [{"detector": "secret", "start": 3, "end": 999}]
    else:
        outputs.pop()
    set_file, out_file = tmp_path / "set.jsonl", tmp_path / "out.jsonl"
    set_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    out_file.write_text("".join(json.dumps(o) + "\n" for o in outputs))
    assert evaluate.main([str(set_file), "--findings", str(out_file)]) == 2


def test_committed_sets_pass_every_label_check() -> None:
    records = evaluate.load_jsonl(HERE / "dev.jsonl") + evaluate.load_jsonl(HERE / "holdout.jsonl")
    assert len(records) >= 330 and generate.verify(records) == []
    rebuilt = generate.split(generate.build())
    assert [r["id"] for r in rebuilt[1]] == [r["id"] for r in evaluate.load_jsonl(HERE / "holdout.jsonl")]


def test_verify_catches_a_bad_card() -> None:
    text = "card 4111111111111112"
    bad = {
        "id": "x",
        "text": text,
        "spans": [_span(text, "4111111111111112", "card")],
        "optional": [],
        "lookalikes": [],
    }
    assert any("Luhn" in p for p in generate.verify([bad]))


def test_placeholders_must_be_stable_and_named_by_kind() -> None:
    text = "a@b.co and a@b.co and c@d.co"
    findings = [{"detector": "email", "start": s, "end": s + 6} for s in (0, 11, 22)]
    assert placeholders.problems("t", text, "<EMAIL_1> and <EMAIL_1> and <EMAIL_2>", findings) == []
    got = {p["problem"] for p in placeholders.problems("t", text, "<EMAIL_1> and <EMAIL_2> and <EMAIL_2>", findings)}
    assert got == {"one email value shown as ['<EMAIL_1>', '<EMAIL_2>']", "<EMAIL_2> stands for 2 different values"}
    named = placeholders.problems("t", text, "<MAIL_1> and <MAIL_1> and <MAIL_2>", findings)
    assert [p["problem"] for p in named] == [f"email finding shown as <MAIL_{n}>" for n in (1, 1, 2)]
    dropped = placeholders.problems("t", text, "<EMAIL_1> <EMAIL_1> and <EMAIL_2>", findings)
    assert dropped == [{"id": "t", "problem": "text before offset 11 is not kept as it was"}]
