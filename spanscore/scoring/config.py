"""The scoring stage's settings (the ``scoring:`` section)."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class ScoringConfig(BaseModel):
    """The scoring stage: worker pool, retries and how scores are labelled."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    workers: int = Field(8, ge=1)
    """Concurrent scoring jobs (LLM judges are limited further by judge.max_concurrency)."""
    queue_size: int = Field(1000, ge=1)
    """Jobs waiting for a worker. Ready runs not yet decided wait beside it, up to twice as many; past that they
    wait in the assembler (bounded there)."""
    max_attempts: int = Field(4, ge=1)
    """Attempts per job for retryable failures (judge timeouts, 429/5xx)."""
    code_processes: int = Field(2, ge=1, le=64, validation_alias=AliasChoices("code_processes", "code_threads"))
    """Worker processes that run code scorers, started on the first code job (``code_threads`` is its old name)."""
    code_timeout_s: float = Field(10.0, gt=0, le=3600)
    """A code-scoring job still running after this is cut: its worker is killed and the job ends as an error."""
    poll_interval_s: float = Field(0.2, gt=0, le=10)
    """How often the assembler is asked for ready runs."""
    pass_threshold: float = Field(0.5, ge=0)
    """Label a score `pass` when at least this (or at most this, for lower-is-better scorers), else `fail`."""
    drain_timeout_s: float = Field(20.0, ge=0)
    """At shutdown, how long the ready runs in line (up to half of it) and then the queued scoring jobs may take
    before they are cut (decided and rescored after restart, or by a fleet successor through the handover note);
    shorter than ``shutdown_timeout_s``, so that scores and spans are still flushed and the process exits 0."""
    recover_on_start: bool = True
    """Re-read recent traces on start (max_wait + late_span_window) so runs pending at a crash are still scored."""
