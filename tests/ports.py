"""Ports a test picks before it starts the process that binds them: ``spanscore.testing.ports``, shared with bench/."""

from spanscore.testing.ports import free_port

__all__ = ["free_port"]
