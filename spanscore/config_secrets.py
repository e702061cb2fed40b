"""Which configuration values are secrets, so that no error message ever repeats one.

A config error names the key and the problem; for most keys it also shows the value it got, which
is what makes ``rules[2].sample: must be between 0 and 1, got 1.5`` useful. For a key that holds a
secret (tokens, passwords, API keys, DSNs that may carry a password, headers that may carry an
``Authorization``) the value would land in a terminal, a log file or a CI transcript, so the error
omits it and scrubs it from the message too. Judged by the key's name, anywhere in its path, plus
any value that looks like a URL with credentials in it, whatever its key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "<redacted>"
_SECRET_KEY = re.compile(
    r"secret|passw|credential|private|cookie|authorization|api_?key|dsn|header|(^|_)tokens?$", re.I
)
# Counts, names of environment variables and file paths are not themselves secrets.
_NOT_SECRET_KEY = re.compile(r"^(max|min)_|_env$|_file$", re.I)
_URL_CREDENTIALS = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s@]+@", re.I)


def is_secret_location(parts: Iterable[int | str]) -> bool:
    """True when any key on the path names a secret (``collector.auth_tokens[0]``, ``forward.headers['x']``)."""
    return any(isinstance(part, str) and _secret_key(part) for part in parts)


def is_secret_value(value: object) -> bool:
    """True for a string that carries credentials on its own, such as ``clickhouse://user:pass@host/``."""
    return isinstance(value, str) and bool(_URL_CREDENTIALS.search(value))


def scrub(message: str, value: object) -> str:
    """``message`` with every occurrence of the secret ``value`` (and of the strings inside it) replaced."""
    for text in sorted(_strings(value), key=len, reverse=True):
        if text:
            message = message.replace(text, REDACTED)
    return message


def _secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key)) and not _NOT_SECRET_KEY.search(key)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value, repr(value)]
    if isinstance(value, dict):
        return [text for item in value.items() for part in item for text in _strings(part)]
    if isinstance(value, list | tuple | set):
        return [text for item in value for text in _strings(item)]
    return [str(value)] if isinstance(value, int | float) and len(str(value)) >= 4 else []
