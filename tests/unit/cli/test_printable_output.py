"""What the CLI and the log print of others' text: control characters escaped, so text cannot drive a terminal."""

from __future__ import annotations

import io
import logging

import pytest

from spanscore.cli.logs import EscapingFormatter
from spanscore.cli.scored_run_text import format_scored_runs
from spanscore.cli.tables import format_table
from spanscore.printable import printable

HOSTILE = "ok\x1b[2J\x1b]52;c;cGF5bG9hZA==\x07\u202eevil\x9b"


def _no_controls(text: str, allowed: str = "") -> None:
    bad = [c for c in text if (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2028") and c not in allowed]
    assert not bad, bad


def test_printable_writes_controls_as_visible_escapes() -> None:
    assert printable("a\x1bb\nc\u202e") == "a\\x1bb\\nc\\u202e"
    assert printable("line1\nline2\tx", keep="\n\t") == "line1\nline2\tx"
    assert printable("héllo ✓ 日本") == "héllo ✓ 日本"


def test_table_output_escapes_cells() -> None:
    table = format_table({"meta": [{"name": "SpanName"}], "data": [{"SpanName": HOSTILE + "\nforged row"}]})
    _no_controls(table, allowed="\n")
    assert table.count("\n") == 4  # header, rule, one row, row count: the cell's newline made no row
    assert "\\x1b[2J" in table


def test_runs_show_escapes_span_text_and_keeps_its_lines() -> None:
    run = {
        "run_id": "r", "trace_id": "t", "span_id": "s", "agent_name": HOSTILE, "model": "m",
        "system": None, "input": [{"role": "user", "content": "two\nlines"}],
        "output": [{"role": "assistant", "content": HOSTILE}], "tool_calls": [], "context": [], "ground_truth": None,
    }  # fmt: skip
    text = format_scored_runs([run])
    _no_controls(text, allowed="\n\t")
    assert "two\nlines" in text and "\\x1b]52" in text


@pytest.mark.parametrize("value", ["rule\n2026-01-01 ERROR forged", "esc\x1b[31mred", "bell\x07"])
def test_a_logged_value_stays_on_its_line(value: str) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(EscapingFormatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("spanscore.tests.escaping")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("rule applied name=%s", value)
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert written.count("\n") == 1 and written.startswith("WARNING rule applied name=")
    _no_controls(written, allowed="\n")
