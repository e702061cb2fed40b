"""The built-in LLM-judge scorers; importing this package registers them with ``registry``.

Each module holds one scorer or a small family: its answer schemas, its
prompts (written for spanscore), and its score formula as a plain function so
the arithmetic can be tested without a judge. Formulas follow the seed
documents and, where those are silent, @mastra/evals 1.10.2; docs/judge.md
lists every deliberate difference.
"""

from spanscore.scorers.llm import (
    alignment,
    answers,
    context,
    conversation,
    custom,
    grounding,
    opinions,
    recall,
    summarization,
    tools,
)
from spanscore.scorers.llm.custom import LLMStep, create_llm_scorer

__all__ = [
    "LLMStep",
    "alignment",
    "answers",
    "context",
    "conversation",
    "create_llm_scorer",
    "custom",
    "grounding",
    "opinions",
    "recall",
    "summarization",
    "tools",
]
