"""The network edge: OTLP listeners, tokens, API, dashboard, metrics, errors to the wire, the service."""
