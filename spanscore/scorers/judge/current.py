"""The judge scorers are built with: a service's ``judge:`` section and its one client, passed down.

``using_judge`` sets it for the scorers built inside; ``current_judge`` is what an LLM scorer starts from.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import trace

from spanscore.scorers.judge.client import JudgeClient
from spanscore.scorers.judge.config import JudgeConfig


class Judge:
    """The judge scorers are built with: the ``judge:`` section and the one client that calls it.

    The service makes one from its config and passes it down (``with using_judge(judge): build(...)``),
    so every scorer of a service shares its client (model limits, circuit breakers, workers) and two
    services in one process do not share anything. The client is made on first use when not given.
    """

    def __init__(
        self,
        config: JudgeConfig | None = None,
        *,
        tracer: trace.Tracer | None = None,
        client: JudgeClient | None = None,
    ) -> None:
        self.config = config or JudgeConfig()
        self._tracer = tracer
        self._client = client

    @property
    def client(self) -> JudgeClient:
        if self._client is None:
            self._client = JudgeClient(tracer=self._tracer, worker_processes=self.config.worker_processes)
        return self._client

    def with_overrides(self, overrides: Mapping[str, Any]) -> Judge:
        """The same judge with ``overrides`` on its config (``spanscore score --judge-*``); a client of its own."""
        return Judge(self.config.with_overrides(dict(overrides)), tracer=self._tracer)

    def health_metrics(self) -> dict[str, float]:
        """Failing judge models now (``JudgeHealth.metrics``); empty before the first call."""
        return self._client.health.metrics() if self._client is not None else {}

    async def aclose(self) -> None:
        """Stop the client's worker processes, if a client was ever made; it stays usable."""
        if self._client is not None:
            await self._client.aclose()


_DEFAULT = Judge()
"""The judge of scorers built outside any ``using_judge`` (a library user's, the offline commands' default)."""
_building: contextvars.ContextVar[Judge] = contextvars.ContextVar("spanscore_judge", default=_DEFAULT)


def current_judge() -> Judge:
    """The judge scorers being built now start from (``using_judge``), else the default one."""
    return _building.get()


@contextlib.contextmanager
def using_judge(judge: Judge) -> Iterator[Judge]:
    """Build scorers with ``judge``: LLM scorers made inside take its config and its client."""
    token = _building.set(judge)
    try:
        yield judge
    finally:
        _building.reset(token)
