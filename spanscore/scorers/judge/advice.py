"""What an operator should hear about a judge before its first call: api_base shape, key, price.

``spanscore config check`` prints these as warnings and the serve banner
repeats the price one: a judge whose ``api_base`` the provider would double
up or reject (``providers.api_base_warning``), a hosted provider behind an
``api_base`` with no key setting, and a model litellm cannot price, whose
scores then record their cost as unknown rather than a confident 0.
Warnings, not errors: a proxy may well expect an unusual path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spanscore.scorers.judge.providers import api_base_warning, key_warning, provider_of

_LOCAL = frozenset({"ollama", "ollama_chat"})


def price_known(model: str) -> bool:
    """Whether litellm's bundled price table prices ``model`` (local Ollama models are free, so known)."""
    if provider_of(model) in _LOCAL:
        return True
    from spanscore.scorers.judge.litellm_call import litellm

    try:
        # The catalogue only: litellm.get_model_info may ask a provider's server about the model (vLLM,
        # Ollama), and a banner or a config check must contact nobody.
        info = litellm.utils.get_model_info_helper(model=model, catalog_only=True)
    except Exception:  # litellm raises for a model it has no entry for
        return False
    return info.get("input_cost_per_token") is not None


def price_note(model: str) -> str | None:
    """The banner's and config check's sentence for an unpriced model, else None."""
    if price_known(model):
        return None
    return (
        f"litellm has no price for {model}: cost unknown (scores record judge.cost=unknown, "
        "and cost budgets cannot count its calls)"
    )


def judge_warnings(judges: Iterable[Mapping[str, Any]]) -> list[str]:
    """Warnings for every distinct judge setting (the judge: section, scorers' overrides), in order."""
    warnings: list[str] = []
    seen: set[tuple[str, str | None]] = set()
    for judge in judges:
        model = str(judge.get("model") or "")
        api_base = judge.get("api_base")
        if not model or (model, api_base) in seen:
            continue
        seen.add((model, api_base))
        for note in (
            api_base_warning(model, api_base),
            key_warning(model, api_base, judge.get("api_key_env"), judge.get("api_key_file")) if api_base else None,
            price_note(model),
        ):
            if note and note not in warnings:
                warnings.append(note)
    return warnings
