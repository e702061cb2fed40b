"""The scored run as stored: exactly what the scorers received, so a user can see what was scored.

``run_view`` turns a canonical ``Run`` into a JSON-safe dict (input and output
messages, system prompt, tool calls with arguments and results, retrieved context,
ground truth, and ``sources``: the attribute each field came from). One row per
(trace id, run id, service) goes to ``scored_runs`` (migrations 0007 and 0012) when a run
is sent to its scorers, so another service reusing the ids cannot replace it; the
dashboard, ``/api/v1/runs/<trace>`` and ``spanscore runs show`` read it back unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from spanscore.answer import answer_messages
from spanscore.run import Message, Run, ToolCall, ToolSpec

SCORED_RUN_COLUMNS = (
    "Timestamp", "RunTimestamp", "TraceId", "RunId", "SpanId", "ServiceName", "AgentName", "Run", "Version",
    "Target", "SessionId", "RunService",
)  # fmt: skip


def _tool_call(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments if call.arguments is None or isinstance(call.arguments, str) else dict(call.arguments)
    view = {"name": call.name, "arguments": arguments, "result": call.result, "id": call.id, "order": call.order}
    if call.error is not None:  # the tool's span ended in an error status
        view["error"] = call.error
    return view


def _tool_spec(spec: ToolSpec) -> dict[str, Any]:
    parameters = None if spec.parameters is None else dict(spec.parameters)
    return {"name": spec.name, "description": spec.description, "parameters": parameters}


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": message.content, "tool_calls": [_tool_call(c) for c in message.tool_calls]}


def _messages(messages: tuple[Message, ...] | None) -> list[dict[str, Any]] | None:
    return None if messages is None else [_message(m) for m in messages]


def _output(messages: tuple[Message, ...] | None) -> list[dict[str, Any]] | None:
    """The output messages, the ones that make the answer marked ``answer: true`` (the rest are steps)."""
    if messages is None:
        return None
    answer = answer_messages(messages)
    return [{**_message(m), "answer": any(m is a for a in answer)} for m in messages]


def run_view(run: Run) -> dict[str, Any]:
    """The fields scorers read, as JSON-safe values; ``None`` keeps meaning "the spans never carried it"."""
    view: dict[str, Any] = {
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
        "output": _output(run.output),
        # The answer the page shows and the scorers read: one rule picks it (spanscore.answer).
        "answer": run.output_text,
        "tool_calls": None if run.tool_calls is None else [_tool_call(c) for c in run.tool_calls],
        "context": None if run.context is None else list(run.context),
        "ground_truth": run.ground_truth,
        "sources": dict(run.sources),
    }
    if run.target != "run":  # a span-level view says what it is and which run it belongs to
        view.update(target=run.target, parent_run_id=run.parent_run_id)
    if run.tools is not None:  # the tools an LLM call was offered
        view["tools"] = [_tool_spec(spec) for spec in run.tools]
    if run.version_attributes:  # which version of the agent ran (docs/compare.md)
        view["version_attributes"] = dict(run.version_attributes)
    if run.finish_reasons is not None:  # why each model call stopped
        view["finish_reasons"] = list(run.finish_reasons)
    return view


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
    target: str = "run"
    session_id: str = ""

    @classmethod
    def of(cls, run: Run) -> ScoredRunRow:
        body = orjson.dumps(run_view(run), default=str).decode("utf-8")
        return cls(
            run.start_time_ns,
            run.trace_id,
            run.run_id,
            run.span_id,
            run.service_name or "",
            run.agent_name or "",
            body,
            target=run.target,
            session_id=run.session_id or "",
        )

    def columns(self) -> tuple[Any, ...]:
        return (
            self.timestamp_ns, self.run_timestamp_ns, self.trace_id, self.run_id, self.span_id, self.service_name,
            self.agent_name, self.run_json, self.timestamp_ns, self.target, self.session_id, self.service_name,
        )  # fmt: skip


def session_record(session: Run, claimant: dict[str, str] | None = None) -> ScoredRunRow:
    """What a fleet replica scored of a session: the run ids of the turns it covered, written before the judge.

    A row of ``scored_runs`` with target ``session``, the session id as run id and an empty trace id (so no
    read of a trace's runs finds it); the next owner of the session reads it (``scoring_claims.session_records``) and
    skips what it covered, while the ``claimant`` (its replica and instance) is alive or a score came after it.
    """
    turns = [turn.run_id for turn in session.turns or ()]
    record = {"session_id": session.run_id, "turns": turns, "last_trace_id": session.trace_id, **(claimant or {})}
    body = orjson.dumps(record).decode()
    return ScoredRunRow(
        session.start_time_ns,
        "",
        session.run_id,
        session.span_id,
        session.service_name or "",
        session.agent_name or "",
        body,
        target="session",
        session_id=session.run_id,
    )


def scored_run_columns(rows: Sequence[ScoredRunRow]) -> list[list[Any]]:
    """Transpose rows into the column lists an insert takes."""
    return [list(column) for column in zip(*(row.columns() for row in rows), strict=True)] if rows else []


def run_from_view(view: dict[str, Any]) -> Run:
    """A ``Run`` back from what ``run_view`` stored (the fields scorers read, ids, times and target)."""
    return Run(
        view.get("input"),
        view.get("output"),
        system=view.get("system"),
        context=view.get("context"),
        ground_truth=view.get("ground_truth"),
        tool_calls=view.get("tool_calls"),
        run_id=view.get("run_id") or "",
        trace_id=view.get("trace_id") or "",
        span_id=view.get("span_id") or "",
        model=view.get("model"),
        provider=view.get("provider"),
        agent_name=view.get("agent_name"),
        service_name=view.get("service_name"),
        session_id=view.get("session_id"),
        user_id=view.get("user_id"),
        error=view.get("error"),
        start_time_ns=int(view.get("start_time_ns") or 0),
        end_time_ns=int(view.get("end_time_ns") or 0),
        sources=view.get("sources") or {},
        target=view.get("target") or "run",
        parent_run_id=view.get("parent_run_id"),
        tools=view.get("tools"),
        finish_reasons=view.get("finish_reasons"),
        version_attributes=view.get("version_attributes"),
    )


def parse_stored_run(text: str) -> dict[str, Any]:
    """A stored ``Run`` column back as the dict ``run_view`` made."""
    value: dict[str, Any] = orjson.loads(text)
    return value
