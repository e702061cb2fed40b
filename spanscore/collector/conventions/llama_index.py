"""LlamaIndex agent workflows as OpenInference records them.

A LlamaIndex agent runs as a workflow whose spans are CHAIN spans named after
the workflow's methods (``FunctionAgent.run``, ``BaseWorkflowAgent.init_run``);
no attribute names the agent. Its events (``AgentInput``, ``AgentOutput``,
``StopEvent``), which the instrumentation records as their Python reprs, each
say which agent handles them as ``current_agent_name='NAME'``; that is the only
place the name the user gave the agent appears.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_CURRENT_AGENT = re.compile(r"current_agent_name='([^'\\]+)'")
VALUE_KEYS = ("output.value", "input.value")


def current_agent_name(attributes: Mapping[str, str]) -> str | None:
    """The agent a workflow event recorded in the span's input or output value names, if any."""
    for key in VALUE_KEYS:
        value = attributes.get(key)
        if value and "current_agent_name=" in value:
            match = _CURRENT_AGENT.search(value)
            if match:
                return match.group(1)
    return None
