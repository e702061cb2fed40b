from __future__ import annotations

import sys
from pathlib import Path

# The collector tests import the loopback fake and the fixture loader as plain modules.
_ROOT = Path(__file__).resolve().parents[3]
for path in (_ROOT, Path(__file__).resolve().parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
