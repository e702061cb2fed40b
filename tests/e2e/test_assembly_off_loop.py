"""Run assembly and readiness run on their own thread, never on the event loop the receivers share (#43).

Assembly cost about 6.6 µs per span on the event loop, in the acknowledgement path of every export. Timings
are not asserted here (bench.ack_modes measures them); what is checked is where the work runs: the assembler's
intake and readiness record the thread they ran on, it must not be the loop's, and the runs are still scored.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from spanscore.config import ServiceConfig
from spanscore.runs.readiness import RunAssembler
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import _wait_for, agent_traces


async def test_assembly_and_readiness_run_off_the_loop(
    service_config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    seen: dict[str, set[int]] = {}

    def recording(name: str) -> None:
        real = getattr(RunAssembler, name)

        def run(self: RunAssembler, *args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, set()).add(threading.get_ident())
            return real(self, *args, **kwargs)

        monkeypatch.setattr(RunAssembler, name, run)

    for name in ("add_spans", "add_logs", "poll_ready", "pending_trace_ids"):
        recording(name)
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.3})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [RuleConfig.model_validate({"name": "r", "sample": 1.0, "scorers": ["completeness"]})]
    service = Service(service_config)
    await service.start()
    try:
        assert service.grpc is not None
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(3)) == "SUCCESS"
        assert await _wait_for(service, "SELECT count() FROM scores FINAL WHERE Status = 'ok'", 3) == 3
    finally:
        await service.shutdown()
    assert {"add_spans", "poll_ready"} <= seen.keys()
    on_loop = sorted(name for name, threads in seen.items() if loop_thread in threads)
    assert not on_loop, f"run assembly ran on the event loop: {on_loop}"
