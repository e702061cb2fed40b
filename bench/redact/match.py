"""The match rule of the redaction set, kept apart from running anything so that it can be tested by hand.

A finding matches a labelled span when it overlaps at least half of the span's characters. For a kind's own
figures the finding must also be of that kind; for the overall figures any detector will do, since a value
masked under the wrong name is still not sent. A finding that matches no labelled span but touches an optional
span (a reserved placeholder) is ignored; any other finding is a false positive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("email", "phone", "card", "iban", "national_id", "ip", "secret", "url_credentials")
PROVIDER_PREFIXES = (
    "sk-",
    "sk_live_",
    "rk_live_",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AIza",
    "hf_",
    "glpat-",
    "SG.",
    "npm_",
    "whsec_",
)
PROVIDER = "secret:provider_key"


def overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    return max(0, min(a_end, b_end) - max(a_start, b_start))


def covers(finding: dict[str, Any], span: dict[str, Any]) -> bool:
    """At least half of the labelled span is inside the finding (a one-character span needs that character)."""
    length = int(span["end"]) - int(span["start"])
    return 2 * overlap(finding["start"], finding["end"], span["start"], span["end"]) >= length > 0


@dataclass
class Tally:
    labelled: int = 0
    found: int = 0
    findings: int = 0
    correct: int = 0

    def recall(self) -> float | None:
        return self.found / self.labelled if self.labelled else None

    def precision(self) -> float | None:
        return self.correct / self.findings if self.findings else None


@dataclass
class Result:
    tallies: dict[str, Tally] = field(default_factory=dict)
    misses: list[dict[str, Any]] = field(default_factory=list)
    false_positives: list[dict[str, Any]] = field(default_factory=list)
    wrong_kind: list[dict[str, Any]] = field(default_factory=list)

    def tally(self, key: str) -> Tally:
        return self.tallies.setdefault(key, Tally())


def _label_keys(span: dict[str, Any]) -> list[str]:
    keys = [span["kind"]]
    if span["kind"] == "secret" and span["value"].startswith(PROVIDER_PREFIXES):
        keys.append(PROVIDER)
    return keys


def _score_labels(rec: dict[str, Any], findings: list[dict[str, Any]], result: Result) -> None:
    for span in rec["spans"]:
        same = any(f["detector"] == span["kind"] and covers(f, span) for f in findings)
        anyk = any(covers(f, span) for f in findings)
        for key in _label_keys(span):
            result.tally(key).labelled += 1
            result.tally(key).found += same
        result.tally("overall").labelled += 1
        result.tally("overall").found += anyk
        if not same:
            by = [f["detector"] for f in findings if covers(f, span)]
            result.misses.append(
                {
                    "id": rec["id"],
                    "kind": span["kind"],
                    "value": span["value"],
                    "start": span["start"],
                    "end": span["end"],
                    "masked_as": by,
                }
            )


def _lookalike_at(rec: dict[str, Any], f: dict[str, Any]) -> str | None:
    for la in rec.get("lookalikes", []):
        if overlap(f["start"], f["end"], la["start"], la["end"]):
            return str(la["category"])
    return None


def _score_findings(rec: dict[str, Any], findings: list[dict[str, Any]], result: Result) -> None:
    text = rec["text"]
    for f in findings:
        matched = [s for s in rec["spans"] if covers(f, s)]
        if not matched and any(overlap(f["start"], f["end"], o["start"], o["end"]) for o in rec.get("optional", [])):
            continue  # a reserved placeholder: masking it is neither right nor wrong
        kind_tally = result.tally(f["detector"])
        kind_tally.findings += 1
        result.tally("overall").findings += 1
        entry = {
            "id": rec["id"],
            "detector": f["detector"],
            "start": f["start"],
            "end": f["end"],
            "text": text[f["start"] : f["end"]],
        }
        if any(s["kind"] == f["detector"] for s in matched):
            kind_tally.correct += 1
        elif matched:
            result.wrong_kind.append({**entry, "labelled_as": [s["kind"] for s in matched]})
        if matched:
            result.tally("overall").correct += 1
        else:
            result.false_positives.append({**entry, "lookalike": _lookalike_at(rec, f)})


def score(records: list[dict[str, Any]], findings_by_id: dict[str, list[dict[str, Any]]]) -> Result:
    """Apply the match rule to every record; a record with no entry in findings_by_id had no findings."""
    result = Result()
    for key in (*KINDS, PROVIDER, "overall"):
        result.tally(key)
    for rec in records:
        findings = findings_by_id.get(rec["id"], [])
        _score_labels(rec, findings, result)
        _score_findings(rec, findings, result)
    return result


def leaks(rec: dict[str, Any], redacted: str) -> list[dict[str, Any]]:
    """Labelled values still present word for word in the redacted text, whatever the findings claim."""
    return [{"id": rec["id"], "kind": s["kind"], "value": s["value"]} for s in rec["spans"] if s["value"] in redacted]
