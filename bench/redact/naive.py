"""A naive C1 redactor made of plain regular expressions, to show how much the set's look-alikes cost one.

    .venv/bin/python -m bench.redact.evaluate bench/redact/dev.jsonl \
        --spanscore ".venv/bin/python -m bench.redact.naive"

It is a yardstick, not a candidate: a detector set that does no better than this has not earned its library.
Cards and IBANs are checked (Luhn, mod-97) as the issue asks; everything else is shape only.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter

from bench.redact.values import iban_ok, luhn_ok

PATTERNS = {
    "url_credentials": re.compile(r"(?<=://)[^/\s:@]*:[^/\s@]+@"),
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "iban": re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"),
    "card": re.compile(r"\b\d(?:[ -]?\d){12,18}\b"),
    "ip": re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"),
    "secret": re.compile(
        r"\b(?:sk-[\w-]{20,}|sk_(?:live|test)_\w{16,}|rk_live_\w{16,}|AKIA[A-Z2-7]{16}|gh[pos]_\w{36}|github_pat_\w{40,}"
        r"|xox[bp]-[\w-]{20,}|AIza[\w-]{35}|hf_[A-Za-z]{30,}|glpat-[\w-]{20}|SG\.[\w-]{22}\.[\w-]{43}|npm_\w{36}"
        r"|whsec_\w{24,}|eyJ[\w-]+\.[\w-]+\.[\w-]+)"
    ),
    "phone": re.compile(r"(?<![\w.])(?:\+\d{1,3}[ -]?)?(?:\(\d{2,4}\)[ -]?)?\d{2,4}(?:[ .-]\d{2,4}){2,4}(?![\w.])"),
}
TOKEN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")


def entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def find(text: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    taken: list[tuple[int, int]] = []
    candidates = [(kind, m) for kind, rx in PATTERNS.items() for m in rx.finditer(text)]
    candidates += [("secret", m) for m in TOKEN.finditer(text) if entropy(m.group()) > 4.5]
    for kind, m in candidates:
        if kind == "card" and not luhn_ok(m.group()):
            continue
        if kind == "iban" and not iban_ok(m.group()):
            continue
        if any(m.start() < e and s < m.end() for s, e in taken):
            continue
        taken.append((m.start(), m.end()))
        out.append({"detector": kind, "start": m.start(), "end": m.end()})
    return sorted(out, key=lambda f: int(str(f["start"])))


def redact(text: str, findings: list[dict[str, object]]) -> str:
    numbers: dict[tuple[object, str], str] = {}
    per_kind: Counter[object] = Counter()
    pieces, pos = [], 0
    for f in findings:
        start, end = int(str(f["start"])), int(str(f["end"]))
        key = (f["detector"], text[start:end])
        if key not in numbers:
            per_kind[f["detector"]] += 1
            numbers[key] = f"<{str(f['detector']).upper()}_{per_kind[f['detector']]}>"
        pieces += [text[pos:start], numbers[key]]
        pos = end
    return "".join([*pieces, text[pos:]])


def main() -> int:
    for number, line in enumerate(sys.stdin, start=1):
        try:
            item = json.loads(line)
            text = item["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            print(f"line {number}: not a {{'id', 'text'}} JSON object ({exc})", file=sys.stderr)
            return 2
        findings = find(text)
        print(json.dumps({"id": item["id"], "redacted": redact(text, findings), "findings": findings}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
