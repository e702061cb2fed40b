"""Spans into runs (and sessions): assembly, readiness, recovery after a restart."""
