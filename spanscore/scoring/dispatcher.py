"""Ready runs and sessions -> one decision per rule -> scoring jobs -> score rows.

For each ready subject (a run, its span-level views, a session) the rule engine makes one decision
per rule. Every decision is written before any job starts (the coverage denominator, and what
recovery reads), then one job per scorer of each sampled rule is queued. When all of a rule's jobs
for a subject have ended, a ``sampled`` decision that produced no score is refined to
``missing_input`` / ``not_applicable`` / ``failed``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from spanscore.pipeline import Consumer
from spanscore.redaction.redactor import Redactor
from spanscore.run import Turn
from spanscore.runs.readiness import ReadyRun
from spanscore.runs.sessions import ReadySession, SessionTracker, with_history
from spanscore.sampling.decisions import Decision
from spanscore.sampling.engine import RuleEngine
from spanscore.scorers.base import Scorer, ScoreResult
from spanscore.scorers.context_used import context_used
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.first_cost import FirstCost
from spanscore.scoring.fleet_gate import FleetGate, SessionFence
from spanscore.scoring.rows import decision_row, score_row
from spanscore.scoring.subject import RuleRun, Subject, is_internal
from spanscore.scoring.workers import ScoringJob, ScoringWorkers
from spanscore.storage.scored_runs import ScoredRunRow, session_record
from spanscore.storage.scores import DecisionRow, ScoreRow

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ActiveRules:
    """The rules a dispatch decides with: swapped whole, between two dispatches, when rules change."""

    engine: RuleEngine
    scorers: dict[str, list[Scorer]]
    version: str
    scores_sessions: bool
    redactors: dict[str, Redactor] = field(default_factory=dict)
    """Each rule's redaction policy (``redaction.config``): what its judge calls mask."""


class Dispatcher:
    """``Consumer[Sequence[ReadyRun]]``: decides ready runs and queues their jobs; owns the worker pool."""

    def __init__(
        self,
        rules: ActiveRules,
        config: ScoringConfig,
        *,
        decisions: Consumer[Sequence[DecisionRow]],
        scored_runs: Consumer[Sequence[ScoredRunRow]],
        scores: Consumer[Sequence[ScoreRow]],
        sessions: SessionTracker,
    ) -> None:
        self.rules = rules
        self._config = config
        self.owns_session: Callable[[str], bool] = _everything
        """Whether this replica scores a session (a fleet splits them among replicas; one process owns all)."""
        self.sessions_shared = False
        """True in a fleet: other replicas store turns and decide runs too (start-up recovery waits for them)."""
        self.first_cost = FirstCost(lambda: self.rules.engine)
        """While a budget has not learnt what a run costs, a burst waits for its first judged run to end."""
        self.gate = FleetGate()
        """In a fleet: its fence (sessions are scored only under a grant, recorded, and their scores written
        only while the grant holds), and its claims on runs before any judge call (``scoring.fleet_gate``)."""
        self.sessions_fenced = 0
        self.sessions_reopened = 0
        """Sessions refused a grant while still owned here (a lease lapse): opened again, not lost."""
        """Sessions not scored, or session scores not written, because the grant was refused or outdated."""
        self.sessions_skipped_as_scored = 0
        """Sessions not scored because a recorded scoring already covered every turn."""
        self.may_poll_sessions: Callable[[], bool] = _always
        """False while a fleet replica cannot prove its ownership: its sessions wait, none is made ready."""
        self._decisions = decisions
        self._scored_runs = scored_runs
        self._scores = scores
        self.sessions = sessions
        self.workers: ScoringWorkers[RuleRun] = ScoringWorkers(_Finished(self), config)
        self.scores_written: Counter[tuple[str, str]] = Counter()  # (rule, status)
        self.scores_cost_unknown: Counter[str] = Counter()
        """Scores per rule whose judge calls litellm could not price: their cost is unknown (NULL), not 0."""
        self.decisions_written: Counter[str] = Counter()
        self.internal_runs_skipped = 0
        self.subjects_decided = 0
        """Subjects decided since start; with ``runs_in_flight``, how far a batch of them got (backfill progress)."""
        self.runs_in_flight = 0
        """Sampled subjects (per rule) whose scorers have not all ended yet."""

    async def consume(self, items: Sequence[ReadyRun], /) -> None:
        """Decide every run (and its span views), write all decisions in one insert, then queue the jobs.

        A run with a session id becomes a turn of its session when a rule scores sessions (and is stored
        as one, for recovery).
        """
        subjects: list[tuple[Subject, bool]] = []
        turns: list[ScoredRunRow] = []
        now = time.time_ns()
        scores_sessions = self.rules.scores_sessions
        for ready in items:
            if is_internal(ready.run):
                self.internal_runs_skipped += 1
                continue
            rescore = ready.reason == "late_span_rescore"
            subjects.append(
                (Subject(ready.run, ready.reason, ready.fingerprint, ready.too_large, shed=ready.shed), rescore)
            )
            subjects.extend(
                (Subject(view, ready.reason, too_large=ready.too_large, shed=ready.shed), False) for view in ready.views
            )
            session_id = ready.run.session_id
            if scores_sessions and session_id and ready.run.target == "run":
                if not self.owns_session(session_id):
                    turns.append(ScoredRunRow.of(ready.run))  # stored for the replica that owns the session
                # A session new to memory may have earlier turns in storage only: stored before a restart, or
                # before keep_scored_s passed, or by another replica. They are read back before it is scored.
                elif self.sessions.add(ready.run, now, needs_history=True):
                    turns.append(ScoredRunRow.of(ready.run))
        rules = self.rules
        subjects = await self.gate.unclaimed(subjects)
        if self.rules is not rules:  # swapped during the fleet's store read: the new rules may select a view
            subjects = _completed_views(subjects, items)
        if items and all(ready.shed or ready.too_large for ready in items):
            # Nothing here is judged: no first cost to wait for, no budget to lease in a fleet.
            await self.dispatch(subjects, turns)
            return
        first = True
        async for part in self.first_cost.parts(subjects):  # one part, unless a budget has yet to learn a cost
            if not first:
                await self.gate.make_room(part)  # a fleet leases for the rest now that a run's cost is known
            await self.dispatch(part, turns if first else ())
            first = False

    @property
    def fence(self) -> SessionFence | None:
        return self.gate.fence

    @fence.setter
    def fence(self, fence: SessionFence | None) -> None:
        self.gate.fence = fence

    async def take_up_claims(self) -> None:
        """Dispatch the runs left to a replica that has gone without scoring them (a fleet round's step)."""
        if due := await self.gate.due():
            await self.dispatch(due)

    async def dispatch(
        self,
        subjects: Sequence[tuple[Subject, bool]],
        stored: Sequence[ScoredRunRow] = (),
        grants: dict[str, object] | None = None,
    ) -> None:
        """Decide ``(subject, rescore)`` pairs; ``stored`` are scored-run rows already due (session turns).

        ``grants`` are a fleet's leave to score sessions, by session id: each session's jobs carry its grant,
        and what it covered is recorded before any job starts.
        """
        grants = grants or {}
        stored = [
            *stored,
            *(
                session_record(s.run, self.fence.claimant() if self.fence is not None else None)
                for s, _ in subjects
                if s.run.target == "session" and s.run.run_id in grants
            ),
        ]
        rules = self.rules
        rows: list[DecisionRow] = []
        jobs: list[ScoringJob[RuleRun]] = []
        scored: dict[tuple[str, str], ScoredRunRow] = {(row.trace_id, row.run_id): row for row in stored}
        for subject, rescore in subjects:
            run = subject.run
            decisions = _decide(rules.engine, subject, rescore)
            for decision in decisions:
                scorers = [
                    s for s in rules.scorers.get(decision.rule, []) if (decision.rule, s.info.id) not in subject.done
                ]
                if not decision.sampled or scorers or not subject.done:
                    rows.append(decision_row(decision, subject, rule_version=rules.version))
                # else: every scorer of the rule was scored by a replica that died before the rest; its decision
                # row (and any refinement of it) is that replica's
                if not decision.sampled:
                    continue
                if not scorers:
                    rules.engine.settle_run(decision.rule)  # nothing to run: release its budget reservation
                book = RuleRun(decision, subject, outstanding=len(scorers), rule_version=rules.version)
                book.grant = grants.get(run.run_id) if run.target == "session" else None
                redactor = rules.redactors.get(decision.rule)
                jobs.extend(
                    ScoringJob(decision.rule, scorer, run, context=book, redactor=redactor) for scorer in scorers
                )
                key = (run.trace_id, run.run_id)
                if scorers and run.target != "session" and key not in scored:  # a session turn is stored already
                    scored[key] = ScoredRunRow.of(run)
                self.runs_in_flight += 1 if scorers else 0
        self.subjects_decided += len(subjects)
        if rows:
            await self._write_decisions(rows)
        if scored:
            await self._scored_runs.consume(list(scored.values()))
        jobs, left = await self.gate.claim(jobs, subjects)
        for book in left:  # nothing runs here: release its budget reservation
            self.rules.engine.settle_run(book.decision.rule)
            self.runs_in_flight -= 1
            self.first_cost.ended()
        for job in jobs:
            await self.workers.submit(job)

    async def on_result(self, job: ScoringJob[RuleRun], result: ScoreResult) -> None:
        """A job ended: its row goes out, its spend counts against the budget, and the last one refines."""
        book = job.context
        rule = book.decision.rule
        row = score_row(
            job.scorer.info, job.run, book, result, pass_threshold=self._config.pass_threshold,
            context_source=context_used(job.scorer.options, job.run),
        )  # fmt: skip
        if await self._outdated(book):
            self.sessions_fenced += 1  # an outdated owner's score: its successor's, over more turns, stands
            log.warning("fleet: session score refused, a newer owner scored it session_id=%s rule=%s", row.run_id, rule)
        else:
            await self._scores.consume([row])
            self.scores_written[rule, result.status.value] += 1
            self.scores_cost_unknown[rule] += 0 if result.cost_known else 1
        tokens = result.input_tokens + result.output_tokens
        if result.cost_usd or tokens:
            # Both units: a rule's budget counts the one it is set in (daily_usd or daily_tokens).
            self.rules.engine.record_spend(rule, result.cost_usd, tokens=tokens)
        book.spent_usd += result.cost_usd
        book.spent_tokens += tokens
        book.statuses[result.status.value] += 1
        book.outstanding -= 1
        if book.outstanding == 0:
            self.runs_in_flight -= 1
            self.rules.engine.settle_run(rule, book.spent_usd, tokens=book.spent_tokens)
            self.first_cost.ended()
            refined = book.refined()
            if refined is not None:
                await self._write_decisions(
                    [decision_row(book.decision, book.subject, refined, rule_version=book.rule_version)]
                )

    async def _outdated(self, book: RuleRun) -> bool:
        """A session score whose grant no longer holds, and which a newer scoring (more turns) supersedes.

        An outdated grant alone does not refuse it: when no one scored the session since, this is its only
        score (its successor skipped the turns this scoring recorded), and refusing it would lose the session.
        """
        fence = self.fence
        if book.grant is None or fence is None or fence.still(book.grant):
            return False
        run = book.subject.run
        turns = {turn.run_id for turn in run.turns or ()}
        return await asyncio.to_thread(fence.superseded, run.run_id, turns)

    async def _write_decisions(self, rows: list[DecisionRow]) -> None:
        await self._decisions.consume(rows)
        for row in rows:
            self.decisions_written[row.decision] += 1


class SessionDispatch:
    """``Consumer[Sequence[ReadySession]]``: a session whose earlier turns may be in storage only reads them first."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        stored_turns: Callable[[dict[str, set[str]]], dict[str, list[Turn]]],
        settled: Callable[[list[str]], set[str]] | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._stored_turns = stored_turns
        self._settled = settled
        """Which of these sessions the store says were settled once (``rescore: never``)."""

    async def consume(self, items: Sequence[ReadySession], /) -> None:
        items = await self._not_settled(items)
        tracker = self._dispatcher.sessions
        behind = [ready.run for ready in items if ready.needs_history]
        held = {run.run_id: {turn.run_id for turn in run.turns or ()} for run in behind}
        """The turns memory holds of each session that reads its earlier ones back."""
        stored = await asyncio.to_thread(self._stored_turns, held) if held else {}
        subjects = []
        for ready in items:
            rescore = ready.reason == "session_continued"
            if ready.needs_history:
                ready = with_history(ready, stored.get(ready.run.run_id, ()), tracker.config)
                tracker.absorb(ready.run.run_id, ready.run.turns or ())
                # Earlier turns only storage had: the session may have been decided before it left memory, and a
                # second decision of the same session is a rescore (else sampling calls it a duplicate).
                known = held[ready.run.run_id]
                if not rescore and any(turn.run_id not in known for turn in ready.run.turns or ()):
                    rescore = True
                    ready = tracker.continued(ready)
            subjects.append((Subject(ready.run, ready.reason), rescore))
        fence = self._dispatcher.fence
        if fence is None:
            await self._dispatcher.dispatch(subjects)
            return
        subjects, grants = await self._fenced(fence, subjects)
        await self._dispatcher.dispatch(subjects, grants=grants)

    async def _not_settled(self, items: Sequence[ReadySession]) -> Sequence[ReadySession]:
        """With ``rescore: never``: the ready sessions the store does not say were settled already.

        Memory knows a scored session only for ``keep_scored_s`` and until a restart; a continuation after
        that would open a new session whose scores (same ids) replace the first ones.
        """
        tracker = self._dispatcher.sessions
        if self._settled is None or tracker.config.rescore != "never" or not items:
            return items
        settled = await asyncio.to_thread(self._settled, [ready.run.run_id for ready in items])
        if not settled:
            return items
        tracker.stats.continued_ignored += sum(1 for ready in items if ready.run.run_id in settled)
        return [ready for ready in items if ready.run.run_id not in settled]

    async def _fenced(
        self, fence: SessionFence, subjects: list[tuple[Subject, bool]]
    ) -> tuple[list[tuple[Subject, bool]], dict[str, object]]:
        """In a fleet: the sessions this replica may score now, with their grants.

        A session whose turns a recorded scoring (by any replica) already covered is not scored again; one
        this replica cannot prove it owns is left to its owner. The records, not this process's memory of what
        it sampled, say whether a session is new: every session kept is decided as a rescore.
        """
        covered = await asyncio.to_thread(fence.covered, [subject.run.run_id for subject, _ in subjects])
        kept: list[tuple[Subject, bool]] = []
        grants: dict[str, object] = {}
        for subject, _ in subjects:
            session_id = subject.run.run_id
            turns = {turn.run_id for turn in subject.run.turns or ()}
            if turns and turns <= covered.get(session_id, set()):
                self._dispatcher.sessions_skipped_as_scored += 1
                continue
            grant = fence.grant(session_id)
            if grant is None:
                self._dispatcher.sessions_fenced += 1
                self._refused(session_id)
                continue
            # Decided as a rescore: this process may have sampled the session before it moved away (or a new
            # token dropped it) and came back with turns no record covers; its memory would call it a duplicate.
            kept.append((subject, True))
            grants[session_id] = grant
        return kept, grants

    def _refused(self, session_id: str) -> None:
        """A session refused its grant stays this replica's to score while it still owns it as last seen.

        The grant is refused when the fence's lease lapsed for a moment (a late renewal) as well as when the
        session moved: in the first case no one else will score it, so it is opened again here and tried
        after another quiet period (the fence is live by then, or a new token retakes it from the store).
        A session that moved is its new owner's, who reads it from the store (nothing was recorded here).
        """
        dispatcher = self._dispatcher
        if dispatcher.owns_session(session_id) and dispatcher.sessions.reopen(session_id, time.time_ns()):
            dispatcher.sessions_reopened += 1


def _completed_views(subjects: list[tuple[Subject, bool]], items: Sequence[ReadyRun]) -> list[tuple[Subject, bool]]:
    """The subjects with every run handed on as its filter view (``runs.selection``) built in full."""
    views = {id(ready.run): ready for ready in items if ready.complete is not None}
    completed = []
    for subject, rescore in subjects:
        ready = views.get(id(subject.run))
        if ready is not None:
            full = ready.completed()
            subject = replace(subject, run=full.run, fingerprint=full.fingerprint)
        completed.append((subject, rescore))
    return completed


def _everything(_: str) -> bool:
    return True


def _always() -> bool:
    return True


class _Finished:
    """``Consumer[ScoringJob[RuleRun]]``: the workers hand each ended job here, and the dispatcher books it."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher

    async def consume(self, job: ScoringJob[RuleRun], /) -> None:
        assert job.result is not None, "a job is handed on only once it ended"
        await self._dispatcher.on_result(job, job.result)


def _decide(engine: RuleEngine, subject: Subject, rescore: bool) -> list[Decision]:
    """Each rule's decision on ``subject``: ``too_large`` when cut, else drawn (and not scored when shed)."""
    if subject.too_large:
        return engine.decide_too_large(subject.run, subject.too_large)
    return engine.decide(subject.run, rescore=rescore, shed=subject.shed)
