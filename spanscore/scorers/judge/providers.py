"""What ``api_base`` and the key mean for each judge provider, so a misconfigured one is caught before a call.

litellm gives ``api_base`` a different meaning per provider: the OpenAI format
appends ``/chat/completions`` (so the base ends in ``/v1``), Anthropic appends
``/v1/messages`` (so the base is the host root, and ``.../v1`` becomes a
``/v1/v1/messages`` 404 that is never retried), Gemini appends
``/models/<model>:generateContent`` (so the base ends in ``/v1beta``), Ollama
appends ``/api/generate`` or ``/api/chat`` (host root). ``spanscore config
check`` warns about a base of the wrong shape (``api_base_warning``), and the
placeholder key a keyless local server needs is only sent to providers that
speak the OpenAI protocol (``needs_placeholder_key``): Anthropic and Gemini
get litellm's own variables (``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``) instead
of ``unused``, Ollama gets no key. docs/judge.md has the table.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Providers litellm reaches with the OpenAI chat protocol: a keyless server behind them still needs a
# key for the client, so a placeholder is sent when none is configured.
OPENAI_PROTOCOL = frozenset({"openai", "hosted_vllm", "openai_like", "lm_studio", "text-completion-openai"})


def provider_of(model: str) -> str:
    """The litellm provider prefix of ``model`` (``openai`` when there is none, as litellm assumes)."""
    prefix, sep, _ = model.partition("/")
    return prefix if sep else "openai"


def needs_placeholder_key(model: str) -> bool:
    """Whether a call to ``model`` with an ``api_base`` and no key setting should carry a placeholder key."""
    return provider_of(model) in OPENAI_PROTOCOL


def api_base_warning(model: str, api_base: str | None) -> str | None:
    """Why ``api_base`` has a shape litellm will double up or the provider will reject for ``model``; else None."""
    if not api_base:
        return None
    provider = provider_of(model)
    path = urlsplit(api_base).path.rstrip("/")
    problem = None
    if provider == "anthropic" and path.endswith(("/v1", "/v1/messages", "/messages")):
        problem = "litellm appends /v1/messages: give the host root (e.g. https://api.anthropic.com)"
    elif provider == "gemini" and not path.endswith(("/v1beta", "/v1")):
        problem = "litellm appends /models/<model>:generateContent: the base must end in /v1beta"
    elif provider in ("ollama", "ollama_chat") and path.endswith(("/api", "/api/generate", "/api/chat", "/v1")):
        problem = "litellm appends /api/generate or /api/chat: give the host root (e.g. http://127.0.0.1:11434)"
    elif provider == "azure" and "/openai/deployments" in path:
        problem = (
            "litellm builds /openai/deployments/<name>/...: give the resource root (https://<name>.openai.azure.com)"
        )
    elif provider in OPENAI_PROTOCOL and path.endswith(("/chat/completions", "/completions")):
        problem = "litellm appends /chat/completions: give the base ending in /v1"
    if problem is None:
        return None
    return f"judge {model}: api_base {api_base} looks wrong: {problem}"


def key_warning(model: str, api_base: str | None, api_key_env: str | None, api_key_file: object) -> str | None:
    """A hosted provider with no key setting: litellm falls back to its own variable; say which."""
    if api_key_env or api_key_file:
        return None
    own = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "azure": "AZURE_API_KEY"}.get(
        provider_of(model)
    )
    if own is None:
        return None
    return f"judge {model}: no api_key_env or api_key_file; litellm will read {own} from the environment"
