"""Storage settings: where spans and scores live, how they are batched, spooled and queried.

Kept with the storage package (not the top-level config) so the write path and the query readers depend only
on their own settings; ``spanscore.config`` composes this section into the whole file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class StorageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    """Where spans and scores live, and how spans are batched into it."""

    data_dir: str = ""
    """Writable directory for the embedded store and the spool (default: spanscore-data in the working
    directory; /var/lib/spanscore in the container image). Never derived from the config file's place: configs
    are often mounted read-only (a Kubernetes ConfigMap, a compose ``:ro`` bind)."""
    dsn: str = ""
    """`chdb:///absolute/path` (embedded, default: ``data_dir`` itself), or `clickhouse://user:pass@host:8123/` /
    `https://...` for a server."""
    migrate: bool = True
    """Apply schema migrations at start. Replicas of one deployment set it to false and let one
    ``spanscore migrate`` run (a Kubernetes Job, a compose one-shot service) bring the schema up first."""
    database: str = Field("spanscore", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    cluster: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Name of a ClickHouse cluster: DDL runs ON CLUSTER with Replicated tables and Distributed tables over them."""
    spans_ttl_days: int = Field(0, ge=0)
    """Delete spans and log records older than this many days; 0 keeps them forever."""
    scores_ttl_days: int = Field(0, ge=0)
    """Delete scores and sampling decisions older than this many days (by run time); 0 keeps them forever."""
    spool_dir: str = ""
    """Where spans wait on local disk while storage is unavailable (default: ``data_dir``/spool).
    Acknowledged spans are always in storage or here."""
    min_free_disk_bytes: int = Field(128 << 20, ge=0)
    """Inserts stop while the store's disk has less free space than this, and spans wait in the spool until
    space is freed. The engine's merges and part metadata keep this room to finish in: a disk filled to the
    last byte can leave a merged part half-written (an empty marks file) that no read gets past. 0 turns the
    floor off. On a server it binds spanscore's own inserts, on the server's disks."""
    spool_max_bytes: int = Field(1 << 30, ge=0)
    """Spool size limit; beyond it receivers answer with backpressure. 0 disables the spool (exports are then
    refused with a retry hint while storage is down)."""
    acknowledge: Literal["stored", "spooled"] = "spooled"
    """When an export is acknowledged: ``spooled`` (the default) once its batch is fsynced in the spool, which
    then feeds storage in the background, within ``insert_interval_s``; ``stored`` after its ClickHouse insert,
    so an OK means queryable. ``spooled`` turns the ack into one fsync instead of an insert: it is the mode that
    keeps the acknowledgement p99 under 50 ms at half the sustained rate (docs/ack-modes.md). The spool must be
    on a disk that outlives the process (not a pod's ephemeral storage that is gone on rescheduling). Without
    a spool (``spool_max_bytes: 0``) the default is ``stored``."""
    batch_max_spans: int = Field(20_000, ge=1)
    """A flush happens as soon as this many spans are waiting..."""
    flush_interval_s: float = Field(0.005, ge=0.0, le=60.0)
    """...or when the oldest waiting span is this old. Exporters wait for the insert, and spans arriving
    during an insert join the next one, so a short linger keeps acks fast while batches grow with load."""
    score_flush_interval_s: float = Field(0.25, ge=0.0, le=10.0)
    """How long the live scorers' score rows may wait to share one insert (sooner when ``batch_max_spans`` wait).
    An insert into ``scores`` also feeds its three roll-up views, about 50-70 ms of engine CPU whatever its size:
    back to back, at about 1,000 scores/s, they took a third of a core or more (#43). Nothing waits on these rows
    (a worker hands its score on and goes on), so a score is only queryable up to this much later. Outside scores
    (``POST /api/v1/scores``, OTLP evaluation results) keep ``flush_interval_s``: their senders wait."""
    insert_interval_s: float = Field(0.25, ge=0.0, le=10.0)
    """With ``acknowledge: spooled``, the least time between two inserts behind the spool (sooner when
    ``batch_max_spans`` are waiting). Each insert has a fixed engine cost, so fewer, larger inserts leave the
    CPU to the receivers; spans become queryable up to this much later."""
    insert_max_spans: int = Field(50_000, ge=1)
    """With ``acknowledge: spooled``, the most spans one insert behind the spool merges (sooner than
    ``insert_interval_s`` once this many wait). An insert's fixed engine cost and its part's later merges are
    shared by its rows, so larger inserts cost less CPU per row; acknowledgements do not wait for them. The
    batches waiting are bounded by ``max_pending_spans``."""
    insert_max_bytes: int = Field(64 << 20, ge=1)
    """With ``acknowledge: spooled``, the most bytes of logged spans (their JSON) one insert merges, whatever
    ``insert_max_spans`` allows (one batch goes whole when larger). 50,000 LLM-sized spans are about 290 MB: the
    insert held them joined, and the engine its copy, beside everything still waiting (a service at 15,000 such
    spans/s peaked at 2.3-3.0 GB; about 2.0 GB with 12,000 per insert, at the same rate). Small spans are far
    under it (50,000 of the bench's are about 25 MB)."""
    max_pending_spans: int = Field(200_000, ge=1)
    """Spans waiting for storage beyond which receivers answer with backpressure (retry later); once for
    small exports and once more for large ones (``bulk_min_records``)."""
    bulk_min_records: int = Field(2_000, ge=0)
    """An export of at least this many spans (or log records) is written beside the small ones, on a storage
    connection of its own, so that small exports are not acknowledged only after a large export's insert.
    0 writes everything in one lane."""
    stuck_after_s: float = Field(30.0, gt=0, le=86_400)
    """A writer whose inserts have failed for this long is reported stuck: ``/healthz`` says ``degraded`` and
    ``write_path_degraded`` is 1. Raise it where storage restarts are routinely longer than this."""
    query_max_execution_time_s: float = Field(10.0, gt=0)
    query_max_memory_bytes: int = Field(1 << 30, ge=1 << 20)
    query_max_result_rows: int = Field(100_000, ge=1)
    query_max_result_bytes: int = Field(128 << 20, ge=1024)
    """Result-size cap of an API query, in uncompressed bytes as the engine counts them (checked per block)."""
    query_max_bytes: int = Field(65_536, ge=64)
    query_dsn: str = ""
    """A separate DSN for the query API and dashboard reads: on a server, a user the engine keeps read-only
    (deploy/clickhouse/query-user.sql). Empty uses ``dsn``."""
    query_allow_writable: bool = False
    """Let the query API run through a server user that can write (refused at start-up otherwise)."""
    query_readers: int = Field(2, ge=1, le=16)
    """Connections that run API queries at once; the dashboard has one more of its own."""

    @field_validator("dsn", "query_dsn")
    @classmethod
    def _check_dsn(cls, dsn: str) -> str:
        if dsn and not dsn.startswith(("chdb:", "clickhouse://", "clickhouses://", "http://", "https://")):
            raise ValueError("must start with chdb:///, clickhouse://, http:// or https://")
        if dsn.startswith("chdb:") and dsn != "chdb://memory" and not dsn.startswith("chdb:///"):
            raise ValueError("an embedded dsn needs an absolute path (chdb:///abs/path)")
        return dsn

    @model_validator(mode="after")
    def _spooled_needs_a_spool(self) -> StorageConfig:
        if self.acknowledge == "spooled" and self.spool_max_bytes == 0:
            if "acknowledge" in self.model_fields_set:
                raise ValueError("acknowledge: spooled needs the spool; spool_max_bytes is 0")
            self.acknowledge = "stored"  # the default needs a spool; without one, acknowledge after the insert
        return self
