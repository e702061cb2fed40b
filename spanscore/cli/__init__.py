"""The command line: argument parsing, the API client and text output; no pipeline logic lives here."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The ``spanscore`` command (``spanscore.cli:main``); the commands load only when it runs."""
    from spanscore.cli.commands import main as run_command

    return run_command(argv)
