"""``GET /api/v1/rules`` (the active set and its version) and ``PUT /api/v1/rules`` (replace it).

A PUT carries ``{"rules": [...]}`` as JSON (``application/json``) or YAML (``application/yaml``); both are types a
web page cannot send cross-site without a CORS preflight, which the browser guard refuses. The whole set is
validated before anything changes (pydantic, then the same scorer and judge checks as at start-up); a refused
set answers 400 with every problem, one per line in ``problems``. Before any of that, ``scorers.trust`` refuses
what only the config file may say (import paths, judges, endpoints, key files): no scorer is built, so no code
runs, for a rule that names any of it. Changing rules needs the API token; on an API
without tokens it is allowed only when the API is bound to loopback.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, Protocol

import yaml
from aiohttp import web

from spanscore.errors import ConfigError, ForbiddenError, PermanentError, RequestShapeError
from spanscore.sampling.rule_sets import RuleSet, parse_rules_document
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.preflight import check_scorers, document_scorer_uses
from spanscore.scorers.trust import api_rule_problems
from spanscore.server.auth import TokenCheck
from spanscore.server.bodies import json_body, read_limited, yaml_body
from spanscore.server.origin import is_loopback
from spanscore.server.wire import json_error

JSON_TYPES = frozenset({"application/json"})
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})
MAX_RULES_BYTES = 1 << 20


class RuleHolder(Protocol):
    """What the service offers this endpoint: the active set, and a validated swap."""

    rule_set: RuleSet
    operator_scorer_paths: frozenset[str]
    """Import-path scorers the config file names: the only code an API rule may name (docs/security.md)."""

    async def apply_rules(self, rules: list[RuleConfig], *, source: str) -> RuleSet: ...

    def describe(self) -> dict[str, Any]: ...


class RulesApi:
    def __init__(
        self, holder: RuleHolder, tokens: TokenCheck, bind_host: str, judge: Mapping[str, Any] | None = None
    ) -> None:
        self._judge = judge or {}
        self._holder = holder
        self._tokens = tokens
        self._bind_host = bind_host

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/rules", self._get)
        app.router.add_put("/api/v1/rules", self._put)

    async def _get(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
        except Exception as exc:
            return json_error(exc)
        return web.json_response(await asyncio.to_thread(self._holder.describe))  # a fleet asks Keeper

    async def _put(self, request: web.Request) -> web.Response:
        try:
            self._tokens.verify(request.headers.get("Authorization"))
            if not self._tokens.enabled and not is_loopback(self._bind_host):
                raise ForbiddenError("changing rules needs api.auth_tokens when the API listens beyond loopback")
            document = await _read_document(request)
            rules = await asyncio.to_thread(self._checked_rules, document)
            before = self._holder.rule_set.version
            applied = await self._holder.apply_rules(rules, source="PUT /api/v1/rules")
        except ConfigError as exc:
            problems = [line for line in str(exc).splitlines() if line.strip()]
            return json_error(PermanentError("rules refused; nothing changed"), problems=problems)
        except Exception as exc:
            return json_error(exc)
        return web.json_response({**applied.describe(), "changed": applied.version != before})

    def _checked_rules(self, document: Any) -> list[RuleConfig]:
        return checked_rules(document, self._holder.operator_scorer_paths, self._judge)


def checked_rules(document: Any, operator_paths: frozenset[str], judge: Mapping[str, Any]) -> list[RuleConfig]:
    """The trust check, then the rules with every problem: for a PUT, and for a preview of rules not applied yet.

    Run it on a worker thread: a megabyte of rules takes seconds to check.
    """
    refused = api_rule_problems(document, operator_paths)
    if refused:
        raise ConfigError("\n".join(refused))
    return _parse_with_every_problem(document, judge)


def _parse_with_every_problem(document: Any, judge: Mapping[str, Any]) -> list[RuleConfig]:
    """Parse the set; when it is refused, add the scorer problems of the rules that did parse far enough.

    Pydantic stops at the shape of a rule; the scorer check (unknown names, judges) needs the names only, so
    both kinds are reported together and one PUT shows everything to fix.
    """
    source = "PUT /api/v1/rules"
    try:
        return parse_rules_document(document, source=source)
    except ConfigError as shape:
        try:
            check_scorers(document_scorer_uses(document), judge, os.environ, source=source)
        except ConfigError as scorers:
            raise ConfigError(f"{shape}\n{scorers}") from None
        raise


async def _read_document(request: web.Request) -> Any:
    kind = request.content_type
    if kind not in JSON_TYPES | YAML_TYPES:
        raise RequestShapeError(
            f"Content-Type {kind!r} is not accepted: send the rules as application/json or application/yaml", 415
        )
    body = await read_limited(request, MAX_RULES_BYTES, "the rule set")
    what = "PUT /api/v1/rules: the body"
    try:  # pure-Python YAML held the event loop 1.3-2.5 s for a 120 kB body: parse on a worker thread
        if kind in JSON_TYPES:
            return await asyncio.to_thread(json_body, body, what)
        return await asyncio.to_thread(yaml_body, body.decode("utf-8"), what)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} is not UTF-8: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} is not valid YAML: {exc}") from None
