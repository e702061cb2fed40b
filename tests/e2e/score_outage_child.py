"""A service whose score and decision inserts fail, run as a child process so a test can kill -9 it.

Prints ``spooled N`` once N score rows are in the spool (acknowledged to the scoring
stage, in storage nowhere), then waits to be killed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from spanscore.config import load_config
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces


async def _unavailable(rows: Any) -> None:
    raise RetryableError("storage unavailable (injected)")


async def main(settings: dict[str, Any]) -> None:
    config = load_config(None, environ={})
    config.storage.dsn = settings["dsn"]
    config.storage.database = settings["database"]
    config.storage.spool_dir = settings["spool_dir"]
    config.collector.grpc.port = 0
    config.collector.http.enabled = False
    config.api.enabled = False
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["completeness"]})]
    service = Service(config)
    assert service.live is not None
    service.live.score_writer.inserter.inserts.rows = Calling(_unavailable)
    service.live.decision_writer.inserter.inserts.rows = Calling(_unavailable)
    await service.start()
    assert service.grpc is not None
    traces = agent_traces(settings["runs"])
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), traces) == "SUCCESS"
    for _ in range(1200):  # at most a minute
        if service.live.score_writer.stats.spooled >= settings["runs"]:
            break
        await asyncio.sleep(0.05)
    print(f"spooled {service.live.score_writer.stats.spooled}", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
