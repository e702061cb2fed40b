"""``spanscore redact``: JSON Lines in, redacted JSON Lines out (contract C1 in docs/security.md, "Redaction").

Reads ``{"id": ..., "text": ...}`` objects from stdin, one a line, and writes for each, in order,
``{"id", "redacted", "findings": [{"detector", "start", "end"}]}`` with offsets into the original text.
It shows what a policy masks without a service, a store or a judge: operators check their ``redact:``
config on their own samples, and the labelled set in bench/redact measures the detectors through it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from spanscore.errors import ConfigError
from spanscore.redaction.config import ALL, RedactConfig, RedactionPolicies
from spanscore.redaction.redactor import Redacted, Redactor


class InputLineError(ValueError):
    """A line of the input is not a ``{"id": <string>, "text": <string>}`` object."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spanscore redact",
        description="Mask personal data and secrets in texts as a judge rule would: JSON Lines "
        '{"id", "text"} on stdin, {"id", "redacted", "findings"} on stdout, one per line, in order.',
    )
    parser.add_argument("-c", "--config", help="YAML configuration file whose redact: section to use")
    parser.add_argument(
        "--policy",
        help=f"a set under redact.sets to use alone ({ALL!r}: every built-in detector); default: redact.default",
    )
    return parser


def main(argv: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        redactor = _redactor(args.config, args.policy)
    except ConfigError as exc:
        print(f"spanscore redact: {exc}", file=sys.stderr)
        return 2
    try:
        for line in redacted_lines(stdin, redactor):
            stdout.write(line)
    except InputLineError as exc:
        stdout.flush()
        print(f"spanscore redact: {exc}", file=sys.stderr)
        return 2
    stdout.flush()
    return 0


def _redactor(config_path: str | None, policy: str | None) -> Redactor:
    config = RedactConfig()
    if config_path is not None:
        from spanscore.config import load_config  # the whole file is validated, as serve would

        config = load_config(config_path).redact
    policies = RedactionPolicies(config)
    if policy is None:
        return policies.for_rule()
    if policies.unknown_sets([policy]):
        where = f"in {config_path}" if config_path else "without -c (only 'all' is built in)"
        raise ConfigError(f"--policy {policy!r}: no such set {where}; the sets are {', '.join(policies.set_names())}")
    return policies.only(policy)


def redacted_lines(lines: Iterable[str], redactor: Redactor) -> Iterable[str]:
    """One output line per input object; blank lines are skipped; ``InputLineError`` names a bad line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        item_id, text = _parsed(line, number)
        yield json.dumps(_output(item_id, redactor.redact(text)), ensure_ascii=False) + "\n"


def _parsed(line: str, number: int) -> tuple[str, str]:
    try:
        item: Any = json.loads(line)
    except ValueError as exc:
        raise InputLineError(f'line {number}: not JSON ({exc}); each line is {{"id": "...", "text": "..."}}') from None
    if not isinstance(item, dict):
        raise InputLineError(f'line {number}: a JSON {type(item).__name__}, not an object {{"id": ..., "text": ...}}')
    item_id, text = item.get("id"), item.get("text")
    if not isinstance(item_id, str):
        raise InputLineError(f'line {number}: "id" must be a string, got {json.dumps(item_id)}')
    if not isinstance(text, str):
        raise InputLineError(f'line {number}: "text" must be a string, got {json.dumps(text)[:80]}')
    return item_id, text


def _output(item_id: str, redacted: Redacted) -> dict[str, Any]:
    findings = [{"detector": f.detector, "start": f.start, "end": f.end} for f in redacted.findings]
    return {"id": item_id, "redacted": redacted.text, "findings": findings}
