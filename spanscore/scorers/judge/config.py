"""``JudgeConfig``: how to reach a judge model and how hard to try, validated once at start-up.

The ``judge:`` section of the service config is one of these; a scorer's
``judge`` / ``model`` options and a step's ``judge`` override it field by
field (:meth:`JudgeConfig.with_overrides`). API keys never appear in the
config itself: ``api_key_env`` names an environment variable and
``api_key_file`` a mounted secret, read when the client is about to call.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from spanscore.errors import PermanentError
from spanscore.scorers.judge.providers import needs_placeholder_key


class JudgeConfig(BaseModel):
    """How to reach a judge model and how hard to try. Set once under ``judge:``; scorers and steps override."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(
        "",
        description="Any litellm model string, provider prefix included. No default: spanscore sends no text to "
        "a model nobody named, so a judge call without one fails with an error saying so.",
    )
    api_base: str | None = Field(
        None,
        description="Where litellm sends the request; its shape depends on the provider (docs/judge.md's table): "
        "an OpenAI-compatible base ends in /v1, Anthropic and Ollama take the host root, Gemini ends in /v1beta.",
    )
    api_key_env: str | None = Field(None, description="Name of the environment variable holding the API key.")
    api_key_file: Path | None = Field(None, description="File holding the API key (a mounted secret).")
    timeout_s: float = Field(60.0, gt=0, description="Limit for one HTTP request to the judge.")
    max_concurrency: int = Field(16, ge=1, description="Requests in flight per model, across all scorers.")
    retries: int = Field(3, ge=0, description="Retries after a 429, 5xx, timeout or dropped connection.")
    backoff_initial_s: float = Field(0.5, ge=0, description="First backoff ceiling; doubles per retry.")
    backoff_max_s: float = Field(30.0, ge=0, description="Largest backoff, also the cap on Retry-After.")
    answer_retries: int = Field(1, ge=0, description="Re-asks after an answer that does not validate.")
    max_tokens: int = Field(1024, ge=16, description="Output budget of the first request.")
    max_tokens_ceiling: int = Field(8192, ge=16, description="Budget a reasoning model may be given on retries.")
    structured_output: Literal["auto", "json_schema", "json_mode", "tool_call", "text"] = Field(
        "auto", description="First rung of the structured-output ladder; 'auto' starts at json_schema."
    )
    breaker_failures: int = Field(5, ge=1, description="Consecutive transient failures that open the breaker.")
    breaker_cooldown_s: float = Field(30.0, ge=0, description="How long an open breaker fails calls fast.")
    worker_processes: Annotated[int, Field(ge=0)] | Literal["auto"] = Field(
        "auto",
        description="Where litellm runs, for the whole process (read from the judge: section when the shared "
        "client is made; ignored in scorer and step overrides): 0 in the service's event loop, N in N judge "
        "worker processes, auto in-process until judge calls sustain 40/s, then one worker per core (2 to 4).",
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_inline_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "api_key" in data:
            raise ValueError(
                "judge.api_key: inline API keys are not accepted; put the key in an environment variable and "
                "set judge.api_key_env to its name, or point judge.api_key_file at a secret file"
            )
        return data

    def with_overrides(self, overrides: JudgeConfig | Mapping[str, Any] | str | None) -> JudgeConfig:
        """Return this config changed by a scorer's or step's override: a model string or a partial mapping."""
        if overrides is None:
            return self
        if isinstance(overrides, JudgeConfig):
            return overrides
        if isinstance(overrides, str):
            overrides = {"model": overrides}
        merged = {**self.model_dump(exclude_unset=True), **dict(overrides)}
        return JudgeConfig.model_validate(merged)

    def resolve_api_key(self, environ: Mapping[str, str]) -> str | None:
        """The API key named by ``api_key_env`` / ``api_key_file``; a placeholder for a keyless ``api_base``."""
        if self.api_key_env:
            key = environ.get(self.api_key_env)
            if not key:
                raise PermanentError(f"judge {self.model}: environment variable {self.api_key_env} is not set")
            return key
        if self.api_key_file is not None:
            try:
                return self.api_key_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise PermanentError(
                    f"judge {self.model}: cannot read api_key_file {self.api_key_file}: {exc}"
                ) from exc
        # Local OpenAI-compatible servers take no key, but the OpenAI client insists on one. Other providers
        # never get the placeholder: Anthropic and Gemini would be sent "unused" in place of litellm's own
        # ANTHROPIC_API_KEY / GEMINI_API_KEY, and Ollama needs no key at all.
        return "unused" if self.api_base and needs_placeholder_key(self.model) else None
