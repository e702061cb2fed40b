"""Detector for secrets: provider key shapes, credentials assigned by name, and high-entropy tokens.

The provider shapes are written here from the prefixes the providers document (the same families that
secret scanners such as gitleaks and detect-secrets cover); a shape with a fixed prefix is near-certain.
A value assigned to a credential name (``password=...``, ``"api_key": "..."``) is masked too. What is left
is judged by its look: a long token mixing upper case, lower case and digits with high Shannon entropy.
Hex strings are never taken on looks alone: commit ids, content hashes and UUIDs are what agents quote
most, and none of them is a secret.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

from spanscore.redaction.patterns import compiled

Hit = tuple[int, int, str]

_PROVIDER_KEYS = compiled(
    "|".join(
        (
            r"\bsk-[A-Za-z0-9_-]{20,300}",  # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-), DeepSeek
            r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",  # AWS access key ids
            r"\bgh[pousr]_[A-Za-z0-9]{30,255}\b",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{50,255}\b",
            r"\bglpat-[A-Za-z0-9_-]{20,64}\b",  # GitLab
            r"\bxox[abposr]-[A-Za-z0-9-]{10,200}",  # Slack
            r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,120}",
            r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,250}\b",  # Stripe
            r"\bwhsec_[A-Za-z0-9+/=]{24,100}",
            r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API keys
            r"\bya29\.[0-9A-Za-z_-]{20,500}",  # Google OAuth access tokens
            r"\bhf_[A-Za-z0-9]{30,60}\b",  # Hugging Face
            r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}\b",  # SendGrid
            r"\bnpm_[A-Za-z0-9]{36}\b",
            r"\bpypi-[A-Za-z0-9_-]{50,300}",
            r"\bgsk_[A-Za-z0-9]{40,60}\b",  # Groq
            r"\bxai-[A-Za-z0-9]{40,100}\b",
            r"\br8_[A-Za-z0-9]{30,45}\b",  # Replicate
            r"\bpplx-[A-Za-z0-9]{40,60}\b",
            r"\bdop_v1_[a-f0-9]{64}\b",  # DigitalOcean
            r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",  # Shopify
            r"\bdapi[a-f0-9]{32}\b",  # Databricks
            r"\bkey-[0-9a-f]{32}\b",  # Mailgun
            r"\bSK[0-9a-f]{32}\b",  # Twilio API key
            r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b",  # Telegram bot
            r"\beyJ[A-Za-z0-9_-]{8,1000}\.eyJ[A-Za-z0-9_-]{8,1000}\.[A-Za-z0-9_-]{8,1000}",  # JWT
            # A PEM private key: header, then the body's characters (escaped newlines too), then its footer.
            r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\r\n\t\\]*"
            r"(?:-----END [A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
        )
    )
)
_ASSIGNED = compiled(
    r"(?i)\b(?:password|passwd|pwd|passphrase|secret|client_secret|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|bearer|token|private[_-]?key)"
    r"[\"']?\s{0,3}(?:[:=]|=>|\s)\s{0,3}[\"']?([^\s\"',;)}\]]{6,300})"
)
_TOKEN = compiled(r"[A-Za-z0-9+/_-]{24,500}={0,2}")
_NOT_SECRET_PREFIXES = (
    "sha1-", "sha256-", "sha384-", "sha512-",  # subresource and lockfile integrity digests
    "chatcmpl-", "cmpl-", "msg_", "req_", "request_", "resp_", "run_", "call_", "toolu_", "file-", "file_",
    "asst_", "thread_", "batch_", "evt_", "span_", "trace_",  # provider object and request ids
)  # fmt: skip
"""Random-looking tokens that identify a request or a digest, not a credential: never taken on looks."""
MIN_ENTROPY_BITS = 4.0
"""Per character, for a token taken on its look alone (a random base62 token of 24+ characters scores ~4.3+)."""


def find_secrets(text: str) -> Iterator[Hit]:
    for match in _PROVIDER_KEYS.finditer(text):
        yield match.start(), match.end(), match.group()
    for match in _ASSIGNED.finditer(text):
        value = match.group(1)
        if _credential_like(value):
            yield match.start(1), match.end(1), value
    for match in _TOKEN.finditer(text):
        start, end = match.start(), match.end()
        if text[start - 1 : start].isalnum() or text[end : end + 1].isalnum():
            continue
        token = match.group()
        if not token.lower().startswith(_NOT_SECRET_PREFIXES) and random_looking(token):
            yield start, end, token


def is_provider_key(value: str) -> bool:
    """Whether ``value`` starts with a provider key's shape (``sk-...``, ``AKIA...``, ``ghp_...``)."""
    match = _PROVIDER_KEYS.search(value)
    return match is not None and match.start() == 0


def _credential_like(value: str) -> bool:
    """A value after ``password:`` or ``token=`` that could be a credential, not a count or a word in prose."""
    if value.isdigit() or value.lower() in ("none", "null", "true", "false", "redacted", "required", "missing"):
        return False
    if value.startswith(("<", "$", "{", "%")):
        return False  # a placeholder or a variable reference, not the value itself
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    return has_digit or has_symbol or len(value) >= 12


def random_looking(token: str) -> bool:
    """True for a token that mixes character classes the way generated keys do and has high entropy."""
    body = token.rstrip("=")
    if all(c in "0123456789abcdefABCDEF-" for c in body):
        return False  # hashes, commit ids, UUIDs
    uppers = sum(c.isupper() for c in body)
    lowers = sum(c.islower() for c in body)
    digits = sum(c.isdigit() for c in body)
    if uppers < 2 or lowers < 2 or digits < 2:
        return False
    if "/" in body and body.count("/") * 12 > len(body):
        return False  # a path (src/app/Main2Window/...), not a token
    return shannon_bits(body) >= MIN_ENTROPY_BITS


def shannon_bits(text: str) -> float:
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())
