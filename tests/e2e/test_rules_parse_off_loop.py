"""A rules body is parsed and checked on a worker thread, never on the event loop the receivers share.

Issue #37 item 9: a 120 KB YAML rules body held the event loop (and with it /healthz and every receiver)
for 1.3-2.5 s, because pure-Python YAML parsing and the rule checks ran on it. Timings are not asserted
here (bench/ measures them); what is checked is where the work runs: the parse and the checks record the
thread they ran on, and it must not be the loop's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from spanscore.server import rules_api
from spanscore.server.service import Service
from tests.e2e.api_client import api_call


@pytest.mark.parametrize("kind", ["application/yaml", "application/json"])
async def test_rules_bodies_are_parsed_off_the_loop(
    service: Service, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    assert service.api is not None
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}

    def recording(name: str, real: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            seen[name] = threading.get_ident()
            return real(*args, **kwargs)

        return run

    monkeypatch.setattr(rules_api, "yaml_body", recording("parse", rules_api.yaml_body))
    monkeypatch.setattr(rules_api, "json_body", recording("parse", rules_api.json_body))
    monkeypatch.setattr(rules_api, "api_rule_problems", recording("trust", rules_api.api_rule_problems))
    monkeypatch.setattr(rules_api, "parse_rules_document", recording("rules", rules_api.parse_rules_document))
    body = (
        b"rules:\n" + b"".join(b"  - name: r%d\n    scorers: [completeness]\n" % i for i in range(2000))
        if kind == "application/yaml"
        else b'{"rules": ['
        + b",".join(b'{"name": "r%d", "scorers": ["completeness"]}' % i for i in range(2000))
        + b"]}"
    )
    status, answer = await asyncio.to_thread(
        api_call, service.api.port, "/api/v1/rules", raw=body, method="PUT", content_type=kind
    )
    assert status == 200, answer
    assert seen.keys() == {"parse", "trust", "rules"}
    assert loop_thread not in seen.values(), "a rules body was parsed or checked on the event loop"
