"""What a model call cost, as the framework that made it recorded it on its span.

Frameworks that price their own calls put the figure on the model-call span, under their own names: OpenLIT
``gen_ai.usage.cost``, OpenInference ``llm.cost.total``, LiteLLM's proxy and SDK ``gen_ai.cost.total_cost``,
Langfuse ``langfuse.observation.cost_details`` (a JSON object of costs by usage type, with or without
``total``). The first of these a span carries is its cost. A span with none has an unknown cost, not 0: the
scoring prices such a run's tokens with litellm's table instead (spanscore.scoring.run_cost).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

COST_ATTRIBUTES = ("gen_ai.usage.cost", "llm.cost.total", "gen_ai.cost.total_cost")
LANGFUSE_COST_DETAILS = "langfuse.observation.cost_details"


def recorded_cost(attributes: Mapping[str, str]) -> float | None:
    """The cost in USD the span recorded for itself, or None when it recorded none (or nothing readable)."""
    for key in COST_ATTRIBUTES:
        if key in attributes:
            return _number(attributes[key])
    details = attributes.get(LANGFUSE_COST_DETAILS)
    if details is None:
        return None
    try:
        parsed = json.loads(details)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    if "total" in parsed:
        return _number(parsed["total"])
    parts = [_number(value) for value in parsed.values()]
    return sum(p for p in parts if p is not None) if parts and None not in parts else None


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None
