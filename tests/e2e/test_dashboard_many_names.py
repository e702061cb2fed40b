"""The dashboard's reads stay small however many score names the store holds, and are encoded off the loop.

Issue #37 item 6: after 200,000 distinct ``gen_ai.evaluation.result`` names each page load (5 GETs of 36-43 MB)
held /healthz for about 3.1 s: every name came back, and rows were converted and JSON-encoded on the event loop.
Now the window's most scored names (``TOP_NAMES``) are listed and charted and the rest are counted as others.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

import pytest

from spanscore.server import dashboard
from spanscore.server.service import Service
from spanscore.storage.reads.dashboard_series import TOP_NAMES
from tests.e2e.test_dashboard import TOKEN, get, score_rows, service_config  # noqa: F401 (fixture)

EXTRA = TOP_NAMES + 30


async def test_many_names_are_cut_to_the_most_scored_and_counted(service: Service) -> None:
    base = score_rows()[0]
    rows = [
        replace(base, score_id=f"many-{i}", scorer=f"name_{i:04d}", rule="source:app", target="run", score=1.0)
        for i in range(EXTRA)
    ]
    popular = [replace(rows[-1], score_id=f"again-{i}") for i in range(3)]  # the last name is the most scored
    await service.store.insert_scores(rows + popular)
    status, body, _ = await get(service, "/api/v1/dashboard/scorers?since=24h")
    assert status == 200, body
    listed = [row["scorer"] for row in body["scorers"]]
    assert len(listed) == TOP_NAMES and listed == sorted(listed)
    assert f"name_{EXTRA - 1:04d}" in listed
    assert body["others"] == {"names": EXTRA - TOP_NAMES, "scored": EXTRA - TOP_NAMES}
    status, trend, _ = await get(service, "/api/v1/dashboard/trend?since=24h")
    assert status == 200 and {point["scorer"] for point in trend["points"]} == set(listed)
    status, one, _ = await get(service, "/api/v1/dashboard/trend?since=24h&scorer=name_0000")
    assert status == 200 and {point["scorer"] for point in one["points"]} == {"name_0000"}


async def test_a_few_names_are_all_listed(service: Service) -> None:
    await service.store.insert_scores(score_rows())
    status, body, _ = await get(service, "/api/v1/dashboard/scorers?since=24h")
    assert status == 200 and body["others"] is None
    assert {row["scorer"] for row in body["scorers"]} == {row.scorer for row in score_rows()}


async def test_dashboard_answers_are_encoded_off_the_loop(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    await service.store.insert_scores(score_rows())
    loop_thread = threading.get_ident()
    threads: list[int] = []

    class RecordingJson:
        @staticmethod
        def dumps(value: Any, **options: Any) -> str:
            threads.append(threading.get_ident())
            return json.dumps(value, **options)

    monkeypatch.setattr(dashboard, "json", RecordingJson)
    for path in ("scorers", "trend", "worst", "coverage", "cost"):
        status, _, _ = await get(service, f"/api/v1/dashboard/{path}?since=24h")
        assert status == 200
    assert len(threads) == 5 and loop_thread not in threads
