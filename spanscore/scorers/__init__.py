"""Scorers: turn an agent run into a score, with the steps that led to it.

The framework lives in ``base`` (steps, results, ``Scorer``), name lookup in
``registry``, the built-in code scorers in ``code/`` and the LLM judges in
``llm/``. Library users need only::

    from spanscore import Run
    from spanscore.scorers import build

    result = build("content_similarity").run(Run(input="Hello", output="hello"))
"""

from spanscore.scorers.base import (
    MissingInput,
    NotApplicable,
    Scorer,
    ScoreResult,
    ScorerInfo,
    Status,
    Step,
    StepContext,
    StepOutput,
    create_scorer,
)
from spanscore.scorers.registry import available, build, register

__all__ = [
    "MissingInput",
    "NotApplicable",
    "ScoreResult",
    "Scorer",
    "ScorerInfo",
    "Status",
    "Step",
    "StepContext",
    "StepOutput",
    "available",
    "build",
    "create_scorer",
    "register",
]
