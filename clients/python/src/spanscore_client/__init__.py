"""A small client for a spanscore service: feedback, queries, runs and scores, rules.

    from spanscore_client import SpanscoreClient
    client = SpanscoreClient("http://127.0.0.1:4319", token="...")
    client.post_feedback(trace_id, "helpfulness", label="up", author="ana")

``spanscore_client.otel`` (extra ``otel``) posts feedback for the current OpenTelemetry span.
"""

from spanscore_client.client import DEFAULT_URL, Feedback, FeedbackResult, QueryResult, SpanscoreClient
from spanscore_client.errors import SpanscoreError

__all__ = ["DEFAULT_URL", "Feedback", "FeedbackResult", "QueryResult", "SpanscoreClient", "SpanscoreError"]
__version__ = "0.1.0"
