"""How a DSN is shown: its password never reaches a terminal, a log line or an error message.

Kept apart from ``connection`` (which imports the driver) so that the CLI can redact without loading it.
"""

from __future__ import annotations

from urllib.parse import urlparse


def redact(dsn: str) -> str:
    """``dsn`` with its password (in the user part or the query string) shown as ``***``.

    Split the way the driver splits it (``urlparse``: the user part ends at the LAST ``@`` of the address),
    so a password with ``@`` or ``:`` in it, written raw, is hidden whole. Every DSN spanscore prints goes
    through here; ``scrub`` hides it inside a message that quotes it.
    """
    parsed = urlparse(dsn)
    netloc = parsed.netloc
    if "@" in netloc:
        user_part, _, address = netloc.rpartition("@")
        user, has_password, _ = user_part.partition(":")
        netloc = f"{user}:***@{address}" if has_password else f"{user}@{address}"
    shown = dsn.replace(f"//{parsed.netloc}", f"//{netloc}", 1) if netloc != parsed.netloc else dsn
    if parsed.query:
        query = "&".join(_redacted_parameter(pair) for pair in parsed.query.split("&"))
        shown = shown.replace(f"?{parsed.query}", f"?{query}", 1)
    return shown


_SECRET_PARAMETERS = frozenset({"password", "access_token", "token", "secret"})


def _redacted_parameter(pair: str) -> str:
    name, equals, _ = pair.partition("=")
    return f"{name}=***" if equals and name.lower() in _SECRET_PARAMETERS else pair


def scrub(message: str, *dsns: str) -> str:
    """``message`` with every DSN in ``dsns``, and each one's bare password, replaced by its redacted form."""
    for dsn in dsns:
        if not dsn:
            continue
        message = message.replace(dsn, redact(dsn))
        password = urlparse(dsn).password
        if password:
            message = message.replace(password, "***")
    return message
