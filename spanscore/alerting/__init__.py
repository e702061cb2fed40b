"""Alerts on score quality: sampling-aware aggregates over a window, notified once per firing and resolution."""
