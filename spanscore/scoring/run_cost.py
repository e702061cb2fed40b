"""A run's cost in USD for the score row: what its spans recorded, else its tokens priced per model, else unknown.

The price table is the one litellm ships with the package (``litellm.model_cost``; spanscore sets
``LITELLM_LOCAL_MODEL_COST_MAP`` before importing it, so nothing is fetched), the same table the judge's own
cost comes from (spanscore.scorers.judge.transport.cost_of). It is read as a plain lookup: asking litellm to
price an unknown model can make it query a local model server. A run whose model has no price, or that names no
model or reports no tokens, has no cost: unknown, never 0. A run whose calls used several models is priced
call by call at each model's rates (``Usage.by_model``); one model without a price makes the whole unknown.
"""

from __future__ import annotations

from spanscore.run import Run
from spanscore.scorers.judge.litellm_call import litellm


def run_cost(run: Run) -> float | None:
    if run.usage.cost_usd is not None:
        return run.usage.cost_usd
    if not (run.usage.input_tokens or run.usage.output_tokens):
        return None
    if run.usage.by_model:
        return _priced_by_model(run)
    if not run.model:
        return None
    price = _price(run.model, run.provider)
    if price is None:
        return None
    return run.usage.input_tokens * price[0] + run.usage.output_tokens * price[1]


def _price(model: str, provider: str | None) -> tuple[float, float] | None:
    """(input, output) USD per token for ``model``, trying it as named, with its provider, and without one."""
    names = [model, f"{provider}/{model}" if provider else "", model.partition("/")[2]]
    for name in filter(None, names):
        entry = litellm.model_cost.get(name)
        if isinstance(entry, dict):
            per_input, per_output = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
            if isinstance(per_input, int | float) and isinstance(per_output, int | float):
                return float(per_input), float(per_output)
    return None


def _priced_by_model(run: Run) -> float | None:
    total = 0.0
    for used in run.usage.by_model:
        if not (used.input_tokens or used.output_tokens):
            continue
        price = _price(used.model, used.provider or run.provider) if used.model else None
        if price is None:
            return None  # a part is not the whole
        total += used.input_tokens * price[0] + used.output_tokens * price[1]
    return total
