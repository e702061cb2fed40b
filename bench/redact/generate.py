"""Build the labelled redaction set for issue #42: hand texts plus seeded fills of hand-written templates.

    .venv/bin/python -m bench.redact.generate            # rewrites dev.jsonl and holdout.jsonl next to this file

Every label is checked before anything is written (text[start:end] is the value, cards pass Luhn, IBANs pass
mod-97, labels do not overlap, a labelled value never also appears unlabelled), so a broken set cannot be written.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from bench.redact import lookalikes, values
from bench.redact.hand import HAND_TEXTS
from bench.redact.templates import TEMPLATES

GEN_SEED = 4242
SPLIT_SEED = 20261127
HOLDOUT_SHARE = 0.10
FILLS_PER_TEMPLATE = 7
HERE = Path(__file__).resolve().parent
MARK = re.compile(r"⟦([?-]?)([a-z0-9_]+)\|(.*?)⟧", re.S)
SLOT = re.compile(r"<<([a-z0-9_]+)>>")
DIGIT_RUN = re.compile(r"^[\d -]+$")


def _lookalike(rng: random.Random, category: str) -> str:
    """A look-alike that is unambiguous: a bare 13-19 digit number that passed Luhn would be card-shaped."""
    while True:
        value = lookalikes.lookalike(rng, category)
        digits = sum(c.isdigit() for c in value)
        if not (DIGIT_RUN.match(value) and 13 <= digits <= 19 and values.luhn_ok(value)):
            return value


def fill_slot(rng: random.Random, slot: str) -> str:
    if slot in lookalikes.LOOKALIKES:
        return f"⟦-{slot}|{_lookalike(rng, slot)}⟧"
    simple = {
        "email": values.email,
        "phone": values.phone,
        "card": values.card,
        "iban": values.iban,
        "ip": values.ip,
        "secret": values.secret,
    }
    if slot in simple:
        return f"⟦{slot}|{simple[slot](rng)}⟧"
    if slot == "pemail":
        return f"⟦?email|{values.placeholder_email(rng)}⟧"
    if slot == "dip":
        return f"⟦?ip|{values.doc_ip(rng)}⟧"
    if slot == "nid":
        word, number = values.national_id(rng)
        return f"{word} ⟦national_id|{number}⟧"
    if slot == "awskey":
        key = "AKIA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
        return f"⟦secret|{key}⟧\naws_secret_access_key = ⟦secret|{values.aws_secret_key(rng)}⟧"
    if slot == "urlcred":
        before, cred, after = values.url_credentials(rng)
        return f"{before}⟦url_credentials|{cred}⟧{after}"
    raise ValueError(f"unknown slot <<{slot}>>")


def parse(marked: str) -> dict[str, Any]:
    """Turn markup into plain text with spans (sensitive), optional spans and look-alike spans."""
    out: list[str] = []
    pos = 0
    rec: dict[str, Any] = {"text": "", "spans": [], "optional": [], "lookalikes": []}
    length = 0
    for m in MARK.finditer(marked):
        plain = marked[pos : m.start()]
        out.append(plain)
        length += len(plain)
        flag, kind, value = m.group(1), m.group(2), m.group(3)
        entry = {"start": length, "end": length + len(value), "kind": kind, "value": value}
        if flag == "-":
            entry = {"start": length, "end": length + len(value), "category": kind, "value": value}
        rec[{"": "spans", "?": "optional", "-": "lookalikes"}[flag]].append(entry)
        out.append(value)
        length += len(value)
        pos = m.end()
    out.append(marked[pos:])
    rec["text"] = "".join(out)
    return rec


def fill(rng: random.Random, template: str) -> str:
    """Fill each slot; <<again>> repeats the previous sensitive fill, so a value can occur twice in one text."""
    previous = ""

    def one(m: re.Match[str]) -> str:
        nonlocal previous
        if m.group(1) == "again":
            return previous
        piece = fill_slot(rng, m.group(1))
        previous = piece if not piece.startswith("⟦-") else previous
        return piece

    return SLOT.sub(one, template)


def generated(rng: random.Random) -> list[tuple[str, str]]:
    return [(f"gen:{name}", fill(rng, template)) for name, template in TEMPLATES for _ in range(FILLS_PER_TEMPLATE)]


def build() -> list[dict[str, Any]]:
    rng = random.Random(GEN_SEED)
    items = [("hand", t) for t in HAND_TEXTS] + generated(rng)
    rng.shuffle(items)
    records = []
    for i, (source, marked) in enumerate(items, start=1):
        rec = {"id": f"r{i:04d}", "source": source, **parse(marked)}
        records.append(rec)
    return records


KINDS = ("email", "phone", "card", "iban", "national_id", "ip", "secret", "url_credentials")


def _check_span(rec: dict[str, Any], span: dict[str, Any]) -> list[str]:
    text, kind, value = rec["text"], span.get("kind"), span["value"]
    problems = []
    if text[span["start"] : span["end"]] != value:
        problems.append(f"{rec['id']}: text[{span['start']}:{span['end']}] is not {value!r}")
    if kind is not None and kind not in KINDS:
        problems.append(f"{rec['id']}: unknown kind {kind!r}")
    digits = sum(c.isdigit() for c in value)
    if kind == "card" and not (values.luhn_ok(value) and 13 <= digits <= 19):
        problems.append(f"{rec['id']}: card {value!r} fails Luhn or length")
    if kind == "iban" and not values.iban_ok(value):
        problems.append(f"{rec['id']}: IBAN {value!r} fails mod-97")
    if span.get("category") == "luhn_invalid" and values.luhn_ok(value):
        problems.append(f"{rec['id']}: look-alike {value!r} passes Luhn")
    return problems


def verify(records: list[dict[str, Any]]) -> list[str]:
    """Every way a label could be wrong that a program can see; an empty list means the set is sound."""
    problems: list[str] = []
    for rec in records:
        if any(mark in rec["text"] for mark in ("<<", ">>", "⟦", "⟧")):
            problems.append(f"{rec['id']}: markup left in the text")
        labelled = rec["spans"] + rec["optional"]
        for span in labelled + rec["lookalikes"]:
            problems += _check_span(rec, span)
        ordered = sorted(labelled, key=lambda s: s["start"])
        for a, b in zip(ordered, ordered[1:], strict=False):
            if b["start"] < a["end"]:
                problems.append(f"{rec['id']}: labels {a['value']!r} and {b['value']!r} overlap")
        covered = {(s["start"], s["end"]) for s in labelled}
        for span in labelled:
            for m in re.finditer(re.escape(span["value"]), rec["text"]):
                if not any(s <= m.start() and m.end() <= e for s, e in covered):
                    problems.append(f"{rec['id']}: {span['value']!r} also appears unlabelled at {m.start()}")
    return problems


def split(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    ids = [r["id"] for r in records]
    held = set(random.Random(SPLIT_SEED).sample(ids, k=round(len(ids) * HOLDOUT_SHARE)))
    return [r for r in records if r["id"] not in held], [r for r in records if r["id"] in held]


def counts(records: list[dict[str, Any]]) -> dict[str, int]:
    out = {k: 0 for k in KINDS}
    for rec in records:
        for span in rec["spans"]:
            out[span["kind"]] += 1
    out["optional"] = sum(len(r["optional"]) for r in records)
    out["lookalikes"] = sum(len(r["lookalikes"]) for r in records)
    out["texts_without_sensitive_spans"] = sum(not r["spans"] for r in records)
    return out


def main() -> None:
    records = build()
    problems = verify(records)
    if problems:
        raise SystemExit("the set has wrong labels, nothing written:\n" + "\n".join(problems))
    dev, holdout = split(records)
    for name, part in (("dev.jsonl", dev), ("holdout.jsonl", holdout)):
        with open(HERE / name, "w", encoding="utf-8") as fh:
            for rec in part:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        print(name, len(part), "texts", json.dumps(counts(part)))


if __name__ == "__main__":
    main()
