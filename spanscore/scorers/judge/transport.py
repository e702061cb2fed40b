"""How a judge request reaches litellm: in this process, or in a pool of worker processes.

The judge client builds the ``acompletion`` keyword arguments and decides on
retries, the ladder and validation; a transport only performs one call and
returns a :class:`Reply` (text, finish reason, tokens, cost) or raises
:class:`CallFailed` with the failure already classified. Keeping the litellm
response object on this side of the boundary is what lets the same client
run litellm in worker processes (``judge_workers``), where one call's CPU
cost (4 to 6 ms on the 2-core build machine, nearly all inside litellm) no
longer lands on the service's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from spanscore.scorers.judge.causes import plain_cause
from spanscore.scorers.judge.litellm_call import litellm
from spanscore.scorers.judge.output import reply_text
from spanscore.scorers.judge.resilience import Failure, classify, retry_after
from spanscore.scorers.judge.wire import sent_mode, sent_params


@dataclass(frozen=True, slots=True)
class Reply:
    """What the client needs from one completion."""

    text: str
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    priced: bool = True
    """False when litellm has no price for the model: ``cost_usd`` is then 0 for want of a price, not free."""
    mode_sent: str | None = None
    """The structured-output mode litellm actually put in the request body (``wire.sent_mode``)."""
    params_sent: dict[str, Any] = field(default_factory=dict)
    """``max_tokens`` and ``temperature`` as litellm sent them."""


class CallFailed(Exception):
    """One call failed; ``failure`` says whether to retry, step down the ladder, or give up."""

    def __init__(self, failure: Failure, message: str, *, error_type: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.failure = failure
        self.error_type = error_type
        self.retry_after = retry_after


class Transport(Protocol):
    async def complete(self, kwargs: dict[str, Any], *, structured: bool) -> Reply:
        """Perform one completion; raise ``CallFailed`` (classified) when it fails."""
        ...

    async def shutdown(self) -> None:
        """Release processes or connections; idempotent."""
        ...


def reply_of(response: Any, body: dict[str, Any] | None = None) -> Reply:
    choices = getattr(response, "choices", None) or ()
    usage = getattr(response, "usage", None)
    cost = cost_of(response)
    return Reply(
        text=reply_text(choices[0].message) if choices else "",
        finish_reason=str(choices[0].finish_reason) if choices and choices[0].finish_reason else None,
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=cost or 0.0,
        priced=cost is not None,
        mode_sent=sent_mode(body),
        params_sent=sent_params(body),
    )


def cost_of(response: Any) -> float | None:
    """Price a response with litellm's table: the figure it computed already, else on demand, else None."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # litellm has no price for this model (local server, custom name)
            return None
    return None if cost is None else float(cost)


_LOCAL_REGISTERED: set[str] = set()


def _local_model_known(model: str) -> None:
    """Tell litellm an Ollama model is local and free, so it never looks it up over the network.

    Without an entry in its table, litellm asks Ollama about the model (``POST /api/show``) several times
    per call, synchronously on the caller's event loop, and at the *default* host (localhost:11434 or
    ``OLLAMA_API_BASE``) rather than the judge's ``api_base``: a host nobody configured.
    """
    provider, _, name = model.partition("/")
    if provider not in ("ollama", "ollama_chat") or not name or name in _LOCAL_REGISTERED:
        return
    free = {"mode": "chat", "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
    for provider in ("ollama", "ollama_chat"):
        # Straight into the table: ``litellm.register_model`` itself looks the model up first, over the network.
        litellm.model_cost.setdefault(f"{provider}/{name}", {**free, "litellm_provider": provider})
    _LOCAL_REGISTERED.add(name)


def describe_error(error: BaseException) -> str:
    """The failure in plain words (``causes.plain_cause``): logged, stored in the score's error, shown by status."""
    return plain_cause(error)


async def call_litellm(kwargs: dict[str, Any], *, structured: bool) -> Reply:
    """One ``litellm.acompletion`` in this process, its failure classified, with the body litellm sent."""
    _local_model_known(str(kwargs.get("model", "")))
    sent: list[dict[str, Any]] = []

    def capture(details: dict[str, Any]) -> None:
        # litellm's per-call hook sees the provider request body it built, just before sending it.
        body = (details.get("additional_args") or {}).get("complete_input_dict")
        if not sent and isinstance(body, dict):
            sent.append(body)

    try:
        response = await litellm.acompletion(**kwargs, logger_fn=capture)
    except Exception as exc:
        raise CallFailed(
            classify(exc, structured=structured),
            describe_error(exc),
            error_type=type(exc).__name__,
            retry_after=retry_after(exc),
        ) from exc
    return reply_of(response, sent[0] if sent else None)


class InProcessTransport:
    """litellm on the caller's event loop: the default, and the only choice for short-lived loops."""

    async def complete(self, kwargs: dict[str, Any], *, structured: bool) -> Reply:
        return await call_litellm(kwargs, structured=structured)

    async def shutdown(self) -> None:
        return None
