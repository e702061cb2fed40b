"""Bearer-token checks shared by every listener: constant-time, tokens never logged."""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Sequence

from spanscore.errors import ConfigError, UnauthenticatedError
from spanscore.server.origin import is_loopback


class TokenCheck:
    """Accepts ``Authorization: Bearer <token>`` for any configured token; none configured = open.

    ``Basic`` with a configured token as the password (any user name) is accepted too: exporters that
    only speak Basic, such as the Langfuse SDK's (its public key as the user, its secret key as the
    password), can then send here with the token as their secret key.
    """

    def __init__(self, tokens: Sequence[str]) -> None:
        self._tokens = [t.encode("utf-8") for t in tokens if t]

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def verify(self, authorization: str | None) -> None:
        if not self._tokens:
            return
        if not authorization:
            raise UnauthenticatedError("missing bearer token: send 'Authorization: Bearer <token>'")
        scheme, _, presented = authorization.strip().partition(" ")
        if scheme.lower() == "basic" and presented:
            presented = _basic_password(presented)
        elif scheme.lower() != "bearer" or not presented:
            raise UnauthenticatedError(
                "the Authorization header must use the Bearer scheme (or Basic, with a token as the password)"
            )
        candidate = presented.strip().encode("utf-8")
        # Compare against every token without stopping early, so timing reveals nothing.
        matched = False
        for token in self._tokens:
            matched |= hmac.compare_digest(candidate, token)
        if not matched:
            raise UnauthenticatedError("invalid bearer token")


def _basic_password(credentials: str) -> str:
    """The password of Basic credentials (``base64(user:password)``)."""
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise UnauthenticatedError("the Basic credentials are not base64 of 'user:password'") from None
    _user, colon, password = decoded.partition(":")
    if not colon or not password:
        raise UnauthenticatedError("the Basic credentials have no password: send a token as the password")
    return password


def require_tokens_beyond_loopback(tokens: TokenCheck, bind_host: str, setting: str) -> None:
    """A receiver without ``collector.auth_tokens`` may listen on loopback only.

    Token-less ingest trusts whoever can connect; beyond loopback that is every machine on the network, which
    could write spans and forged evaluation scores. Checked before binding, so nothing listens meanwhile.
    """
    if not tokens.enabled and not is_loopback(bind_host):
        raise ConfigError(
            f"{setting} is {bind_host!r}, beyond loopback, but collector.auth_tokens is empty: anyone who can reach "
            f"it could write spans and scores; set collector.auth_tokens, or bind {setting} to 127.0.0.1"
        )
