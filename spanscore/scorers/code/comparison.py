"""What ``content_similarity`` and ``textual_difference`` share: the output compared with one other text.

Both compare the output with the run's input (as @mastra/evals does) or its ground truth (option
``compare_with``), require both texts, and describe themselves the same way; only the measure differs.
"""

from __future__ import annotations

from typing import Any

from spanscore.run import Run
from spanscore.scorers.base import Scorer, create_scorer
from spanscore.scorers.code.text import output_text, reference_text


def compared_texts(run: Run, side: str) -> tuple[str, str]:
    """The text on ``side`` (input or ground truth) and the output text, in that order."""
    return reference_text(run, side), output_text(run)


def comparison_scorer(name: str, version: str, side: str, measure: str, options: dict[str, Any]) -> Scorer:
    """An empty scorer comparing ``side`` with the output by ``measure`` (a phrase naming the similarity)."""
    return create_scorer(
        name,
        version=version,
        description=f"{measure} between the {side.replace('_', ' ')} and the output text.",
        requires=(side, "output"),
        options={**options, "compare_with": side},
    )
