"""Feedback posted before its trace was stored gets attached to its span once storage has the span.

``POST /api/v1/scores`` keeps a score whose span storage does not hold yet, marked ``pending_span``
(``feedback.row_for_unresolved``): an application's thumbs-up can arrive before the exporter's batch,
and under ``spooled`` acknowledgement even an acknowledged span reaches storage a little later. This
loop looks for such rows every ``interval_s``, finds their spans (the same lookup the POST made), and
writes each resolved row over its pending one (same id, same timestamp). A score whose trace never
arrives stays stored, still marked, for ``max_age_s``; after that it is no longer looked for.

Each pass looks at two pages: the newest pending scores (their traces are the likeliest to be arriving)
and the next page of all the others, walked oldest first from where the last pass stopped. So scores that
never resolve (an exporter that drops traces posts them by the thousand) cost one look per full walk and
never keep newer feedback from resolving: the oldest-first page alone once let 1,000 of them starve every
later score for the seven days they were kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from pydantic import ValidationError

from spanscore.collector.outside_rows import ScoredSpan
from spanscore.pipeline import Background, Consumer, every
from spanscore.scoring.feedback import OutsideScore, row_for_posted, row_never_resolved
from spanscore.storage.reads.outside_scores import (
    PendingScore,
    Queries,
    expired_feedback,
    pending_feedback,
    scored_spans,
    unresolved_counts,
)
from spanscore.storage.scores import ScoreRow

log = logging.getLogger(__name__)

PAGE = 1000
"""Pending scores per page; a pass reads two pages (the newest, and the next of the walk)."""


class FeedbackResolver:
    """Resolves pending posted scores in the background; ``resolve_once`` is one pass (tests call it directly)."""

    def __init__(
        self,
        store: Queries,
        writer: Consumer[Sequence[ScoreRow]],
        interval_s: float = 5.0,
        max_age_s: float = 7 * 86400.0,
        page: int = PAGE,
    ) -> None:
        self._store = store
        self._writer = writer
        self._interval_s = interval_s
        self._max_age_s = max_age_s
        self._page = page
        self._walked_to: tuple[int, str] = (0, "")
        self._background = Background("feedback-resolver")
        self.resolved = 0
        self.expired = 0
        self.failures = 0
        self.pending = 0
        """Scores waiting for their trace at the last pass (``scores FINAL``)."""
        self.never_resolved = 0
        """Scores whose trace never came, marked so after ``max_age_s``."""

    async def start(self) -> None:
        self._background.start(self._loop)

    async def shutdown(self) -> None:
        await self._background.stop()

    async def _loop(self) -> None:
        await every(self._interval_s, self._background.stopping, self.resolve_once, self._failed)

    def _failed(self, exc: Exception) -> None:
        """Storage down, say: the rows stay pending and the next pass tries again."""
        self.failures += 1
        log.warning("pending feedback not resolved this pass: %s", exc)

    async def resolve_once(self) -> int:
        """Attach every pending score whose span storage now holds; return how many were resolved.

        Then mark the ones past ``max_age_s`` as never resolved, and count what is still waiting.
        """
        resolved = await self._attach()
        await self._expire()
        self.pending, self.never_resolved = await asyncio.to_thread(unresolved_counts, self._store)
        return resolved

    async def _expire(self) -> None:
        before = time.time_ns() - int(self._max_age_s * 1e9)
        rows = []
        for score_id, posted, at in await asyncio.to_thread(expired_feedback, self._store, before, self._page):
            try:
                rows.append(row_never_resolved(OutsideScore.model_validate_json(posted), at))
            except ValidationError as exc:
                log.warning("pending score %s cannot be read back, left as it is: %s", score_id, exc)
        if rows:
            await self._writer.consume(rows)
            self.expired += len(rows)

    async def _attach(self) -> int:
        pending = await asyncio.to_thread(self._pages)
        scores: list[tuple[OutsideScore, int]] = []
        for score_id, posted, at in pending:
            try:
                scores.append((OutsideScore.model_validate_json(posted), at))
            except ValidationError as exc:
                log.warning("pending score %s cannot be read back, left as it is: %s", score_id, exc)
        if not scores:
            return 0
        wanted = [(score.trace_id, score.span_id) for score, _ in scores]
        facts = await asyncio.to_thread(scored_spans, self._store, wanted)
        rows = [
            row_for_posted(score, ScoredSpan(*facts[score.trace_id, score.span_id]), posted_at_ns=at)
            for score, at in scores
            if (score.trace_id, score.span_id) in facts
        ]
        if rows:
            await self._writer.consume(rows)
            self.resolved += len(rows)
        return len(rows)

    def _pages(self) -> list[PendingScore]:
        """The newest page and the walk's next page, each score once; the walk restarts after its last page."""
        since = time.time_ns() - int(self._max_age_s * 1e9)
        newest = pending_feedback(self._store, since, self._page, newest_first=True)
        walked = pending_feedback(self._store, since, self._page, after=self._walked_to)
        self._walked_to = (walked[-1][2], walked[-1][0]) if len(walked) == self._page else (0, "")
        chosen = {score_id: (score_id, posted, at) for score_id, posted, at in newest + walked}
        return list(chosen.values())
