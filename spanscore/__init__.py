"""spanscore: a live scoring service for AI agents.

Agents send OpenTelemetry spans over OTLP; spanscore stores them in ClickHouse,
assembles agent runs, scores sampled runs and keeps the scores next to the spans.
The top-level package re-exports the few names a library user needs; the rest
lives in the pipeline stages (``collector``, ``sampling``, ``scorers``, ``storage``).
"""

from spanscore.run import Message, Run, ToolCall

__all__ = ["Message", "Run", "ToolCall", "__version__"]
__version__ = "0.1.0"
