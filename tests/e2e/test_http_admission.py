"""Issue #37: OTLP/HTTP bodies are read a few at a time, as OTLP/gRPC exports are.

Against a real `spanscore serve` with ingest tokens. The token was already checked before a body is read,
but nothing capped how many authenticated bodies were read and decoded at once: each holds its body
twice (the chunks, then the joined bytes) and its decoded rows, so eight concurrent 24 MiB posts held all
of that together. The figures are bench/grpc_admission.py's (``--http``); these bounds are generous.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bench.grpc_admission import trace_export
from tests.e2e.served_memory import TOKEN, serve

MIB = 1 << 20
PROTOBUF = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}


async def post_concurrently(port: int, bodies: list[bytes]) -> list[int]:
    """Each body posted to /v1/traces on a connection of its own, all at once; the statuses."""

    async def post(body: bytes) -> int:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=180)) as session:
            async with session.post(f"http://127.0.0.1:{port}/v1/traces", data=body, headers=PROTOBUF) as reply:
                await reply.read()
                return reply.status

    return list(await asyncio.gather(*(post(body) for body in bodies)))


@pytest.mark.reliability("bounded-memory-backpressure")
def test_concurrent_bodies_are_read_one_at_a_time_under_a_cap_of_one(tmp_path: Path) -> None:
    """Eight concurrent 24 MiB posts with the token and ``max_concurrent_reads: 1``: read in turn.

    A post that waits longer than 30 s for its turn (a loaded machine) is answered 503 with Retry-After, which
    OTLP exporters retry: that is the cap working, not a failure. Before, all eight were read at once (+460 MiB
    in bench/grpc_admission.py --http).
    """
    bodies = [trace_export(24 * MIB, span) for span in range(1, 9)]
    with serve(tmp_path, http_options="max_concurrent_reads: 1") as served:
        with served.measure() as peak:
            statuses = asyncio.run(post_concurrently(served.http_port, bodies))
    assert set(statuses) <= {200, 503} and statuses.count(200) >= 2, statuses
    assert peak.growth_mib < 300, f"eight 24 MiB posts grew the service by {peak.growth_mib:.0f} MiB"
