"""``spanscore runs show``: a scored run as plain text, in conversation order, each field with its source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.printable import printable

_MISSING = "(missing)"


def format_scored_runs(runs: Sequence[dict[str, Any]]) -> str:
    """Every run of a trace as the scorers received it; a field the spans never carried says so.

    Span text is the sender's: control characters are shown escaped, so it cannot drive the terminal.
    """
    return printable("\n".join(_format_run(run) for run in runs), keep="\n\t")


def _format_run(run: dict[str, Any]) -> str:
    sources: dict[str, str] = run.get("sources") or {}
    lines = [
        f"run {run.get('run_id')}  trace {run.get('trace_id')}  span {run.get('span_id')}",
        f"agent {run.get('agent_name') or '-'}  model {run.get('model') or '-'}",
    ]

    def head(field: str, label: str) -> None:
        source = sources.get(field)
        lines.append(f"\n== {label}" + (f"  [from {source}]" if source else ""))

    head("system", "system")
    lines.append(_MISSING if run.get("system") is None else str(run["system"]))
    for field in ("input", "output"):
        head(field, field)
        messages = run.get(field)
        if messages is None:
            lines.append(_MISSING)
            continue
        for message in messages:
            lines.append(f"[{message['role']}] {message['content']}")
            lines.extend(_call_lines(message.get("tool_calls") or []))
    head("tool_calls", "tool calls")
    calls = run.get("tool_calls")
    lines.extend([_MISSING] if calls is None else _call_lines(calls) or ["(none)"])
    head("context", "context")
    context = run.get("context")
    lines.extend([_MISSING] if context is None else [f"- {item}" for item in context] or ["(none)"])
    head("ground_truth", "ground truth")
    lines.append(_MISSING if run.get("ground_truth") is None else str(run["ground_truth"]))
    return "\n".join(lines) + "\n"


def _call_lines(calls: Sequence[dict[str, Any]]) -> list[str]:
    return [f"  tool {c['name']}({_arguments(c.get('arguments'))}) -> {c.get('result')}" for c in calls]


def _arguments(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, dict):
        return ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return str(arguments)
