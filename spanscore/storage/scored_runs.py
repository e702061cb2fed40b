"""The scored run as stored: exactly what the scorers received, so a user can see what was scored.

``run_view`` turns a canonical ``Run`` into a JSON-safe dict (input and output
messages, system prompt, tool calls with arguments and results, retrieved context,
ground truth, and ``sources``: the attribute each field came from). One row per
(trace id, run id) goes to ``scored_runs`` (migration 0007) when a run is sent to
its scorers; the dashboard, ``/api/v1/runs/<trace>`` and ``spanscore runs show``
read it back unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from spanscore.run import Message, Run, ToolCall

SCORED_RUN_COLUMNS = (
    "Timestamp", "RunTimestamp", "TraceId", "RunId", "SpanId", "ServiceName", "AgentName", "Run", "Version",
)  # fmt: skip


def _tool_call(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments if call.arguments is None or isinstance(call.arguments, str) else dict(call.arguments)
    return {"name": call.name, "arguments": arguments, "result": call.result, "id": call.id, "order": call.order}


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": message.content, "tool_calls": [_tool_call(c) for c in message.tool_calls]}


def _messages(messages: tuple[Message, ...] | None) -> list[dict[str, Any]] | None:
    return None if messages is None else [_message(m) for m in messages]


def run_view(run: Run) -> dict[str, Any]:
    """The fields scorers read, as JSON-safe values; ``None`` keeps meaning "the spans never carried it"."""
    return {
        "trace_id": run.trace_id,
        "span_id": run.span_id,
        "run_id": run.run_id,
        "service_name": run.service_name,
        "agent_name": run.agent_name,
        "model": run.model,
        "provider": run.provider,
        "session_id": run.session_id,
        "user_id": run.user_id,
        "start_time_ns": run.start_time_ns,
        "end_time_ns": run.end_time_ns,
        "error": run.error,
        "system": run.system,
        "input": _messages(run.input),
        "output": _messages(run.output),
        "tool_calls": None if run.tool_calls is None else [_tool_call(c) for c in run.tool_calls],
        "context": None if run.context is None else list(run.context),
        "ground_truth": run.ground_truth,
        "sources": dict(run.sources),
    }


@dataclass(frozen=True, slots=True)
class ScoredRunRow:
    run_timestamp_ns: int
    trace_id: str
    run_id: str
    span_id: str
    service_name: str
    agent_name: str
    run_json: str
    timestamp_ns: int = field(default_factory=time.time_ns)

    @classmethod
    def of(cls, run: Run) -> ScoredRunRow:
        body = orjson.dumps(run_view(run), default=str).decode("utf-8")
        return cls(
            run.start_time_ns, run.trace_id, run.run_id, run.span_id, run.service_name or "", run.agent_name or "", body
        )

    def columns(self) -> tuple[Any, ...]:
        return (
            self.timestamp_ns, self.run_timestamp_ns, self.trace_id, self.run_id, self.span_id, self.service_name,
            self.agent_name, self.run_json, self.timestamp_ns,
        )  # fmt: skip


def scored_run_columns(rows: Sequence[ScoredRunRow]) -> list[list[Any]]:
    """Transpose rows into the column lists an insert takes."""
    return [list(column) for column in zip(*(row.columns() for row in rows), strict=True)] if rows else []


def parse_stored_run(text: str) -> dict[str, Any]:
    """A stored ``Run`` column back as the dict ``run_view`` made."""
    value: dict[str, Any] = orjson.loads(text)
    return value
