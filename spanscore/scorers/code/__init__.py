"""The built-in code scorers (no LLM); importing this package registers them with ``registry``.

Each module holds one scorer and its algorithm as plain functions, so the
numbers can be tested without the framework. The algorithms follow
@mastra/evals 1.10.2; where its code and the seed documents disagree the code
wins, and docs/scorers.md lists every such difference. ``answer_health`` is our
own, beyond that catalogue: the default rule's check for runs that visibly broke.
"""

from spanscore.scorers.code import (
    answer_health,
    completeness,
    content_similarity,
    keyword_coverage,
    session,
    textual_difference,
    tone_consistency,
    tool_call_accuracy,
)

__all__ = [
    "answer_health",
    "completeness",
    "content_similarity",
    "keyword_coverage",
    "session",
    "textual_difference",
    "tone_consistency",
    "tool_call_accuracy",
]
