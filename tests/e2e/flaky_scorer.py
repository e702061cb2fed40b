"""A scorer loaded by import path in tests: fails while ``UNREACHABLE`` is set, as a judge does during an outage.

Code scorers run in worker processes, so the switch is a file both sides can see: its path is put in the
environment when the test imports this module, and the workers, started later, inherit it. Not under
``SPANSCORE_``: every such variable sets a config key, and a service started later in the same test process
refuses an unknown one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from spanscore.scorers import Scorer, StepContext, create_scorer

_FLAG = Path(os.environ.setdefault("FLAKY_SCORER_FLAG_FILE", str(Path(tempfile.gettempdir()) / f"flaky-{os.getpid()}")))


class _FileFlag:
    """``threading.Event``'s three methods, kept in a file so that other processes see them."""

    def set(self) -> None:
        _FLAG.touch()

    def clear(self) -> None:
        _FLAG.unlink(missing_ok=True)

    def is_set(self) -> bool:
        return _FLAG.exists()


UNREACHABLE = _FileFlag()


def flaky() -> Scorer:
    def generate_score(context: StepContext) -> float:
        if UNREACHABLE.is_set():
            raise ConnectionError("cannot connect to host 127.0.0.1:9 (judge outage)")
        return 1.0

    return create_scorer("flaky", requires=()).generate_score(generate_score)
