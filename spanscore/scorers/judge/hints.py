"""Retry hints a provider puts in the error body rather than in a ``Retry-After`` header.

Gemini (and Vertex AI) answer a 429 with the wait inside the JSON body, as a
``google.rpc.RetryInfo`` detail (``"retryDelay": "30s"``), and send no
header. OpenAI's rate-limit errors say it in prose (``Please try again in
1.5s`` / ``in 750ms``), next to headers that are not always forwarded by
proxies. Retrying such a 429 on spanscore's own short backoff only spends the
retries inside the window the provider asked us to stay away for, and then
reports a made-up ``retry_after``. litellm keeps the provider's body in the
exception message, so the hint is read from there.
"""

from __future__ import annotations

import re

# Tolerates the body being quoted once more inside an exception message (``\\"retryDelay\\": ...``).
_RETRY_DELAY = re.compile(r'retryDelay\\*"?\s*:\s*\\*"(\d+(?:\.\d+)?)s')
_TRY_AGAIN = re.compile(r"try again in\s+(\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)


def body_retry_delay(text: str) -> float | None:
    """Seconds to wait that the error body asks for, or None when it names none."""
    match = _RETRY_DELAY.search(text)
    if match:
        return float(match.group(1))
    match = _TRY_AGAIN.search(text)
    if match:
        value = float(match.group(1))
        return value / 1000.0 if match.group(2).lower() == "ms" else value
    return None
