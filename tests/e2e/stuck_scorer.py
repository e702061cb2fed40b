"""A custom code scorer loaded by import path in tests: it never finishes, and holds the GIL while it runs.

A backtracking regular expression on a short text is the classic way a scorer gets stuck: Python's ``re``
keeps the interpreter lock for the whole match, so in the service's own process no other thread (and no
signal handler) would run until it ends, which for this pattern and text is never in practice.
"""

from __future__ import annotations

import re

from spanscore.scorers import Scorer, StepContext, create_scorer

_CATASTROPHIC = re.compile(r"^(a+)+$")


def stuck() -> Scorer:
    def generate_score(context: StepContext) -> float:
        if (context.run.output_text or "").startswith("stuck"):
            return 0.0 if _CATASTROPHIC.match("a" * 64 + "!") else 1.0  # 2**64 steps: never returns
        return 1.0

    return create_scorer("stuck", requires=("output",)).generate_score(generate_score)
