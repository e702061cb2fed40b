"""Checks of C1's placeholders: the redacted text is the original with each finding replaced by `<KIND_n>`, and
the same value in one text always gets the same placeholder (a different value a different one).

The redacted text is walked against the original finding by finding, so a placeholder is read from where the
finding's value was, not guessed from the text; a redacted text that does not line up is reported as such.
"""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDER = re.compile(r"<([^<>\s]+)_(\d+)>")


def substitutions(text: str, redacted: str, findings: list[dict[str, Any]]) -> list[tuple[str, str, str]] | str | None:
    """(detector, original value, placeholder) per finding, or why the redacted text does not line up.

    None when findings overlap: C1 allows that, and then which placeholder stands where is not defined.
    """
    spans = sorted(findings, key=lambda f: f["start"])
    if any(b["start"] < a["end"] for a, b in zip(spans, spans[1:], strict=False)):
        return None
    out, pos_o, pos_r = [], 0, 0
    for f in spans:
        kept = text[pos_o : f["start"]]
        if not redacted.startswith(kept, pos_r):
            return f"text before offset {f['start']} is not kept as it was"
        pos_r += len(kept)
        m = PLACEHOLDER.match(redacted, pos_r)
        if m is None:
            return f"no <KIND_n> placeholder where offset {f['start']} was"
        out.append((f["detector"], text[f["start"] : f["end"]], m.group(0)))
        pos_o, pos_r = f["end"], m.end()
    if redacted[pos_r:] != text[pos_o:]:
        return "text after the last finding is not kept as it was"
    return out


def problems(rec_id: str, text: str, redacted: str, findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    subs = substitutions(text, redacted, findings)
    if subs is None:
        return []
    if isinstance(subs, str):
        return [{"id": rec_id, "problem": subs}]
    found: list[dict[str, Any]] = []
    by_value: dict[tuple[str, str], set[str]] = {}
    by_placeholder: dict[str, set[str]] = {}
    for detector, value, placeholder in subs:
        kind = PLACEHOLDER.fullmatch(placeholder)
        if kind is None or kind.group(1) != detector.upper():
            found.append({"id": rec_id, "problem": f"{detector} finding shown as {placeholder}"})
        by_value.setdefault((detector, value), set()).add(placeholder)
        by_placeholder.setdefault(placeholder, set()).add(value)
    for (detector, _value), shown in by_value.items():
        if len(shown) > 1:
            found.append({"id": rec_id, "problem": f"one {detector} value shown as {sorted(shown)}"})
    for placeholder, vals in by_placeholder.items():
        if len(vals) > 1:
            found.append({"id": rec_id, "problem": f"{placeholder} stands for {len(vals)} different values"})
    return found
