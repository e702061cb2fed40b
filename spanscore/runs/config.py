"""Configuration of run assembly: what a run is and when it is ready to score.

The lead's service config can embed ``RunsConfig`` as ``collector.runs``; the
run assembler and ``runs_from_spans`` receive it and read nothing else.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

NestedAgents = Literal["outermost", "all"]
LateSpanPolicy = Literal["ignore", "rescore"]
SessionRescore = Literal["continued", "never"]


class SessionsConfig(BaseModel):
    """When a conversation (the runs sharing a session id) is ready to score, and what happens when it goes on."""

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)

    quiet_period_s: float = Field(300.0, ge=0)
    """A session is ready once none of its runs became ready for this long."""
    max_duration_s: float = Field(86_400.0, gt=0)
    """A session still going this long after its first run (or its last scoring) is scored anyway."""
    rescore: SessionRescore = "continued"
    """A run arriving for a session already scored: ``continued`` scores the whole session again once it is
    quiet (the new scores replace the old ones, same score ids); ``never`` ignores it (counted)."""
    max_sessions: int = Field(10_000, ge=1)
    """Sessions held in memory, open or recently scored; beyond it the oldest scored one is forgotten, else the
    oldest open one is scored early (ready reason ``session_evicted``)."""
    max_turns: int = Field(500, ge=1)
    """Turns kept per session; a longer conversation keeps its latest turns (the dropped ones are counted)."""
    max_session_bytes: int = Field(16 << 20, ge=1)
    """Estimated bytes of text kept per session (``runs.sizes``); over it the oldest turns are dropped (counted),
    the latest turn is always kept."""
    max_held_bytes: int = Field(256 << 20, ge=1)
    """Estimated bytes of text over all sessions held; over it sessions go as over ``max_sessions``."""
    keep_scored_s: float = Field(3_600.0, ge=0)
    """How long a scored session's turns stay in memory for a continuation; after that, its earlier turns are
    read back from storage (``scored_runs``) when it continues."""

    @model_validator(mode="after")
    def _check_windows(self) -> SessionsConfig:
        if self.quiet_period_s > self.max_duration_s:
            raise ValueError(
                f"collector.sessions.quiet_period_s ({self.quiet_period_s}) must not exceed "
                f"max_duration_s ({self.max_duration_s})"
            )
        return self


class AgentNameRule(BaseModel):
    """A name for the agent of runs whose spans name none (DSPy's ``ReAct.forward``, Haystack's ``Agent.run``).

    A rule matches a run when every matcher it sets matches: ``span_name`` is the exact name of one of the
    run's spans, ``service_name`` the service of the run's root span. Without a name, a rule filtered on
    ``agent.name`` could select nothing from such a framework.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    span_name: str | None = Field(None, min_length=1)
    service_name: str | None = Field(None, min_length=1)
    agent: str = Field(min_length=1)
    """The agent name the run gets (``Run.agent_name``, the ``agent.name`` filter key)."""

    @model_validator(mode="after")
    def _check_matchers(self) -> AgentNameRule:
        if self.span_name is None and self.service_name is None:
            raise ValueError(f"the rule for agent {self.agent!r} needs span_name or service_name to match runs by")
        return self


class RunsConfig(BaseModel):
    """How spans become agent runs and when a run is ready."""

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)

    quiet_period_s: float = Field(2.0, ge=0)
    """A run is ready once its root span has ended and no span of its trace arrived for this long."""
    max_wait_s: float = Field(60.0, gt=0)
    """A run is ready this long after the first span of its trace arrived, complete or not."""
    late_span_window_s: float = Field(300.0, ge=0)
    """How long a trace's spans stay in memory after its runs were ready, so late spans can be attributed."""
    max_pending_traces: int = Field(50_000, ge=1)
    """Traces held in memory at once, waiting and settled (``max_settled_traces``). Beyond it (or
    ``max_pending_spans`` / ``max_pending_bytes``) a trace is evicted and counted: the oldest settled one (its runs
    handed on; it only waited for late spans) first, then one with runs handed on that took a late span since,
    else the oldest one still waiting: its runs whose root has arrived are handed on at once, before their quiet
    period ended; the others are decided ``too_large`` (a ``score_decisions`` row per rule, logged and counted).
    Must hold the traces of about ``quiet_period_s`` + 1 s of traffic: at 10,000 (the default before session 28)
    a service taking 4,000 traces/s (40,000 spans/s in traces of 10) handed 57% of its runs on before their quiet
    period ended; the settled traces' own bound keeps what this one holds beyond the waiting traces as it was."""
    max_settled_traces: int = Field(10_000, ge=0)
    """Settled traces (every run handed on, kept only so late spans are attributed, ``late_span_window_s``) held
    at once; beyond it the oldest is forgotten but for its run ids, as at the window's end. Their spans are
    memory kept for what is usually never needed, so they get a bound of their own, below ``max_pending_traces``,
    which waiting traces need at high rates."""
    max_pending_spans: int = Field(500_000, ge=1)
    """Spans and GenAI log records held in memory at once, over all pending traces (evicts as above)."""
    max_pending_bytes: int = Field(256 << 20, ge=1)
    """Estimated bytes (``runs.sizes``: the text and Python's objects around it, about 1.2 KB for a small span and
    7 KB for an LLM-sized one; strings as Python stores them) held over all pending traces (evicts as above)."""
    max_run_bytes: int = Field(16 << 20, ge=1)
    """Estimated bytes (as ``max_pending_bytes``) one trace may hold; later spans and log records of a trace over it
    are dropped, and its runs are decided ``too_large`` once it is quiet (not scored: what was dropped is usually the
    answer)."""
    max_done_traces: int = Field(100_000, ge=1)
    """Trace ids remembered (without their spans) as already handled, so a run is ready only once."""
    agent_span_names: tuple[str, ...] = ()
    """Span names that mark an agent run besides the conventions' agent markers (exact match)."""
    agent_names: tuple[AgentNameRule, ...] = ()
    """Names for the agent of runs whose spans name none, first matching rule wins (``AgentNameRule``); a
    ``gen_ai.agent.name`` resource attribute comes first, a name any span gives before both."""
    nested_agents: NestedAgents = "outermost"
    """``outermost``: an agent inside another agent is part of the outer run; ``all``: every agent span is a run."""
    late_span_policy: LateSpanPolicy = "ignore"
    """A span arriving after its run was ready: ``ignore`` it, or ``rescore`` the run when its content changed."""
    ground_truth_keys: tuple[str, ...] = (
        "spanscore.ground_truth",
        "ground_truth",
        "expected_output",
        "gen_ai.evaluation.ground_truth",
        "ai.telemetry.metadata.groundTruth",
        "ai.telemetry.metadata.ground_truth",
        "traceloop.association.properties.ground_truth",
        "metadata.ground_truth",
    )
    """Attributes (span, then resource) whose value is the expected answer, first match wins."""
    version_attributes: tuple[str, ...] = (
        "service.version",
        "deployment.environment",
        "deployment.environment.name",
        "gen_ai.prompt.name",
        "gen_ai.prompt.version",
        "langfuse.observation.prompt.name",
        "langfuse.observation.prompt.version",
    )
    """Attributes that say which version of the agent ran: kept with every score (the root span first, then its
    resource, then the model calls and the other spans), so ``spanscore report compare --by`` can group by them.
    Add your own (a prompt id, a feature flag); an attribute not listed here is compared from the raw spans."""

    @model_validator(mode="after")
    def _check_windows(self) -> RunsConfig:
        if self.quiet_period_s > self.max_wait_s:
            raise ValueError(
                f"collector.runs.quiet_period_s ({self.quiet_period_s}) must not exceed max_wait_s ({self.max_wait_s})"
            )
        return self
