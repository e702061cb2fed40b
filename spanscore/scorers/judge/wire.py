"""What litellm actually put on the wire: the structured-output mode and the parameters of the request body.

spanscore asks litellm for a rung of the ladder (``response_format: json_schema``...), but litellm
translates it per provider, and not always into the same thing: for an Anthropic model it does not
know to support native structured output (``claude-3-5-haiku-latest``), a ``json_schema`` request goes
out as a forced tool call. A score that says ``json_schema`` then would be wrong about how its verdict
was obtained. So the transport captures the provider request body litellm built (its per-call
``logger_fn`` hook, which sees the final body just before it is sent) and this module reads the mode
and the sampling parameters out of it, whatever the provider's format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Request-body keys that carry the output budget and the temperature, per provider format.
_MAX_TOKENS_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens", "num_predict")
_TEMPERATURE_KEYS = ("temperature",)


def sent_mode(body: Mapping[str, Any] | None) -> str | None:
    """The ladder rung (``json_schema``, ``json_mode``, ``tool_call``, ``text``) the body asks for; None if unknown.

    Covers the OpenAI chat format (and every OpenAI-compatible server, Azure, vLLM), Anthropic Messages
    (``output_format`` / a forced ``tool_choice``), Gemini (``generationConfig`` and ``toolConfig``) and
    Ollama (``format`` / ``tools``).
    """
    if not isinstance(body, Mapping):
        return None
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
        if kind == "json_schema":
            return "json_schema"
        if kind == "json_object":
            return "json_mode"
    if body.get("output_format") or body.get("output_config"):
        return "json_schema"  # Anthropic native structured output
    if body.get("tools"):  # a judge request carries a tool only as the verdict's forced tool call
        return "tool_call"
    generation = body.get("generationConfig") or body.get("generation_config")
    if isinstance(generation, Mapping):
        if any(generation.get(k) for k in ("response_json_schema", "response_schema", "responseSchema")):
            return "json_schema"
        if str(generation.get("response_mime_type") or generation.get("responseMimeType")) == "application/json":
            return "json_mode"
    ollama_format = body.get("format")
    if isinstance(ollama_format, Mapping):
        return "json_schema"
    if ollama_format == "json":
        return "json_mode"
    return "text"


def sent_params(body: Mapping[str, Any] | None) -> dict[str, Any]:
    """``max_tokens`` and ``temperature`` as sent (under whatever key and nesting the provider uses)."""
    if not isinstance(body, Mapping):
        return {}
    places: list[Mapping[str, Any]] = [body]
    for nested in ("generationConfig", "generation_config", "options"):
        value = body.get(nested)
        if isinstance(value, Mapping):
            places.append(value)
    found: dict[str, Any] = {}
    for place in places:
        for key in _MAX_TOKENS_KEYS:
            if isinstance(place.get(key), int):
                found.setdefault("max_tokens", place[key])
        for key in _TEMPERATURE_KEYS:
            if isinstance(place.get(key), int | float):
                found.setdefault("temperature", float(place[key]))
    return found
