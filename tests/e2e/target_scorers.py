"""A scorer from a module path that declares its own target, as a user's would (``tests.e2e.target_scorers:...``)."""

from __future__ import annotations

from spanscore.scorers import Scorer, StepContext, create_scorer


def documents_found() -> Scorer:
    """Share of retrieved documents that mention a word of the question (a crude, deterministic relevance)."""

    def generate_score(context: StepContext) -> float:
        words = {w.strip("?.,").lower() for w in (context.run.input_text or "").split() if len(w) > 3}
        documents = context.run.context or ()
        hits = sum(1 for d in documents if words & {w.strip("?.,").lower() for w in d.split()})
        return hits / len(documents) if documents else 0.0

    return create_scorer("documents_found", requires=("input", "context"), targets=("retrieval",)).generate_score(
        generate_score
    )
