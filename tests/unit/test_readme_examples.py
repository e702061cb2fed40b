"""The README's scorer example prints what the README says it prints (it printed 0.0 once)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_scorer_example_prints_the_documented_result() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    example = next(block for block in blocks if "from spanscore.scorers import build" in block)
    expected = [line.removeprefix("# ") for line in example.splitlines() if line.startswith("# ")]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(example, "README.md", "exec"), {})
    assert expected and output.getvalue().splitlines() == expected
