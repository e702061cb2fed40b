"""``POST /api/v1/scores``: people's labels and applications' evaluations, stored beside spanscore's scores.

The body is JSON only (an object or a list of at most 1,000), so no web page can post one cross-site
without a preflight the browser guard refuses. It is stored whole or not at all: a bad item answers 400
naming each field (``[2].trace_id: ...``) and nothing is written. Writing needs the API token; an API without
tokens takes scores only when it listens on loopback. A retried POST stores nothing twice (the ids are
deterministic), so a client may retry any failure.
"""

from __future__ import annotations

from typing import Any, Protocol

from aiohttp import web

from spanscore.errors import ForbiddenError, PermanentError, RequestShapeError
from spanscore.scoring.feedback import InvalidScoresError
from spanscore.server.auth import TokenCheck
from spanscore.server.bodies import json_body, read_limited
from spanscore.server.origin import is_loopback
from spanscore.server.wire import json_error

MAX_BODY_BYTES = 4 << 20


class ScoreTaker(Protocol):
    async def add_scores(self, document: Any) -> dict[str, Any]: ...


class ScoresApi:
    def __init__(self, taker: ScoreTaker, tokens: TokenCheck, bind_host: str) -> None:
        self._taker = taker
        self._tokens = tokens
        self._bind_host = bind_host

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/api/v1/scores", self._post)

    async def _post(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            if not self._tokens.enabled and not is_loopback(self._bind_host):
                raise ForbiddenError("adding scores needs api.auth_tokens when the API listens beyond loopback")
            if request.content_type != "application/json":
                message = f"Content-Type {request.content_type!r} is not accepted: send application/json"
                raise RequestShapeError(message, 415)
            body = await read_limited(request, MAX_BODY_BYTES, "the body (send fewer scores per request)")
            document = json_body(body, "body")
            result = await self._taker.add_scores(document)
        except InvalidScoresError as exc:
            return json_error(PermanentError("scores refused, nothing stored"), problems=exc.problems)
        except Exception as exc:
            return json_error(exc)
        return web.json_response(result, status=200)
