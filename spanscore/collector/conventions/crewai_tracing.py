"""CrewAI's own tracing: the GenAI-convention spans ``crewai.telemetry.tracing`` writes (CrewAI 1.15 and later).

A crew kickoff is an ``execute crew`` span (``invoke_workflow``), each task an ``execute task`` span
(``gen_ai.operation.name=execute_task``) holding the task as its user wrote it (``crewai.task.description``,
``gen_ai.input.messages``) and its result; inside it the ``execute agent`` span (``invoke_agent``) holds what
the agent was sent, the task wrapped in CrewAI's framing (the expected output, "you MUST return the actual
complete content ..."), and its model calls and tools. So the task span is the run: its prompt is the one the
user wrote, and the agent span inside it belongs to its run.

CrewAI names the agent on its spans by its internal key (``gen_ai.agent.name`` is an md5 of the agent's
configuration); its role, the name the user gave it, is ``crewai.agent.role`` on the agent, model and tool
spans. A name beats an opaque identifier whatever the dialect (``facts.is_opaque_identifier``).
"""

from __future__ import annotations

from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.parsing import non_empty
from spanscore.records import SpanRecord
from spanscore.run import Message

DIALECT = "crewai"
ATTRIBUTE_PREFIXES = ("crewai.",)
ROLE = "crewai.agent.role"
EXECUTE_TASK = "execute_task"


def extract(span: SpanRecord) -> SpanFacts:
    attributes = span.attributes
    facts = SpanFacts()
    if not any(key.startswith(ATTRIBUTE_PREFIXES) for key in attributes):
        return facts
    facts.put("agent_name", non_empty(attributes.get(ROLE)), f"{DIALECT}:{ROLE}")
    if attributes.get("gen_ai.operation.name") != EXECUTE_TASK:
        return facts
    source = f"{DIALECT}:gen_ai.operation.name"
    facts.put("kind", "agent", source)
    description = non_empty(attributes.get("crewai.task.description"))
    if description is not None:
        facts.put("input", (Message(role="user", content=description),), f"{DIALECT}:crewai.task.description")
    answer = non_empty(attributes.get("crewai.task.output"))
    if answer is not None:
        facts.put("output", (Message(role="assistant", content=answer),), f"{DIALECT}:crewai.task.output")
    return facts
