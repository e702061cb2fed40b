"""Bearer-token checks shared by every listener: constant-time, tokens never logged."""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from spanscore.errors import UnauthenticatedError


class TokenCheck:
    """Accepts ``Authorization: Bearer <token>`` for any configured token; none configured = open."""

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
        if scheme.lower() != "bearer" or not presented:
            raise UnauthenticatedError("the Authorization header must use the Bearer scheme")
        candidate = presented.strip().encode("utf-8")
        # Compare against every token without stopping early, so timing reveals nothing.
        matched = False
        for token in self._tokens:
            matched |= hmac.compare_digest(candidate, token)
        if not matched:
            raise UnauthenticatedError("invalid bearer token")
