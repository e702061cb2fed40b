"""Evaluation results carried by spans and log records, stored as scores before the export is acknowledged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from spanscore.collector.evaluation_events import OutsideEvaluation
from spanscore.collector.outside_rows import row_for_evaluation
from spanscore.pipeline import Consumer
from spanscore.storage.scores import ScoreRow

R = TypeVar("R")


class EvaluationTap(Generic[R]):
    """Stores a batch, then the outside evaluations it carries, before the export is acknowledged.

    Both writes finish before ``consume`` returns, so an acknowledged export's evaluation results are as
    durable as its spans.
    """

    def __init__(
        self,
        inner: Consumer[Sequence[R]],
        extract: Callable[[Sequence[R]], list[OutsideEvaluation]],
        sink: Consumer[Sequence[ScoreRow]],
    ) -> None:
        self._inner = inner
        self._extract = extract
        self._sink = sink
        self.stored = 0

    async def consume(self, batch: Sequence[R], /) -> None:
        await self._inner.consume(batch)
        found = self._extract(batch)
        if found:
            await self._sink.consume([row_for_evaluation(evaluation) for evaluation in found])
            self.stored += len(found)
