"""CrewAI task runs as OpenInference records them.

CrewAI's instrumentation opens an AGENT span for each task an agent executes
(``ROLE._execute_core``, ``ROLE.TASK_NAME._execute_core``) under the crew's
``kickoff`` CHAIN span. Its ``input.value`` is the call's arguments (the agent's
configuration, the context from earlier tasks, the tools), not the task; the
task comes back in ``output.value``, the ``TaskOutput`` the call returned:
``description`` is the task as the user wrote it (inputs interpolated), ``raw``
the agent's answer, ``agent`` the role of the agent that ran it, ``messages``
the conversation with the model. The model itself is sent the description
wrapped in CrewAI's own framing (``Current Task: ...``, the expected output).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spanscore.collector.conventions.parsing import load_json

_TASK_OUTPUT_KEYS = frozenset({"description", "expected_output", "raw", "agent"})
"""Fields every serialised ``TaskOutput`` has, and that together no chain state or message list does."""


@dataclass(frozen=True, slots=True)
class TaskOutput:
    """What a serialised ``TaskOutput`` says about the task: its prompt, its answer and its agent."""

    description: str | None
    raw: str | None
    agent: str | None


def task_output(text: str | None) -> TaskOutput | None:
    """The task a span's ``output.value`` reports, when that value is a CrewAI ``TaskOutput``, else None."""
    if not text or not text.startswith("{") or '"expected_output"' not in text:
        return None
    value: Any = load_json(text)
    if not isinstance(value, Mapping) or not _TASK_OUTPUT_KEYS <= value.keys():
        return None
    return TaskOutput(_text(value.get("description")), _text(value.get("raw")), _text(value.get("agent")))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
